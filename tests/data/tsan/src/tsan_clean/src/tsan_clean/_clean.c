/* The same counter as tsan_samples.incr, but under a PyMutex: TSan must stay quiet. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static long counter = 0;
static PyMutex counter_lock = {0};

static PyObject *
incr(PyObject *self, PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    for (long i = 0; i < n; i++) {
        PyMutex_Lock(&counter_lock);
        counter++;
        PyMutex_Unlock(&counter_lock);
    }
    Py_RETURN_NONE;
}

static PyObject *
value(PyObject *self, PyObject *unused)
{
    PyMutex_Lock(&counter_lock);
    long v = counter;
    PyMutex_Unlock(&counter_lock);
    return PyLong_FromLong(v);
}

static PyMethodDef methods[] = {
    {"incr", incr, METH_O, "counter += n, under a lock"},
    {"value", value, METH_NOARGS, "the counter"},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_GIL_DISABLED
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_clean", NULL, 0, methods, slots,
};

PyMODINIT_FUNC
PyInit__clean(void)
{
    return PyModuleDef_Init(&module);
}
