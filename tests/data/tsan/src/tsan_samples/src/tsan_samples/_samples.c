/* Planted bugs for ThreadSanitizer test data.  Every function "works" (returns
 * normally), so no test assertion fails: only TSan can tell. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static long counter = 0; /* shared, unlocked */

static PyObject *
incr(PyObject *self, PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    for (long i = 0; i < n; i++) {
        counter++; /* data race when called from several threads */
    }
    Py_RETURN_NONE;
}

static PyObject *
value(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(counter);
}

static void *
late_reader(void *p)
{
    usleep(20000); /* sleep is no synchronisation for TSan */
    volatile int x = ((int *)p)[1];
    (void)x;
    return NULL;
}

static PyObject *
uaf(PyObject *self, PyObject *unused)
{
    int *buf = malloc(16 * sizeof(int));
    pthread_t t;
    if (buf == NULL || pthread_create(&t, NULL, late_reader, buf) != 0) {
        free(buf);
        return PyErr_NoMemory();
    }
    free(buf); /* freed while late_reader may still read it */
    Py_BEGIN_ALLOW_THREADS
    pthread_join(t, NULL);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static pthread_mutex_t mutex_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mutex_b = PTHREAD_MUTEX_INITIALIZER;

static PyObject *
lock_ab(PyObject *self, PyObject *unused)
{
    pthread_mutex_lock(&mutex_a);
    pthread_mutex_lock(&mutex_b);
    pthread_mutex_unlock(&mutex_b);
    pthread_mutex_unlock(&mutex_a);
    Py_RETURN_NONE;
}

static PyObject *
lock_ba(PyObject *self, PyObject *unused)
{
    pthread_mutex_lock(&mutex_b);
    pthread_mutex_lock(&mutex_a);
    pthread_mutex_unlock(&mutex_a);
    pthread_mutex_unlock(&mutex_b);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"incr", incr, METH_O, "counter += n, without a lock"},
    {"value", value, METH_NOARGS, "the counter"},
    {"uaf", uaf, METH_NOARGS, "free a buffer another thread still reads"},
    {"lock_ab", lock_ab, METH_NOARGS, "lock A then B"},
    {"lock_ba", lock_ba, METH_NOARGS, "lock B then A"},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_GIL_DISABLED
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_samples", NULL, 0, methods, slots,
};

PyMODINIT_FUNC
PyInit__samples(void)
{
    return PyModuleDef_Init(&module);
}
