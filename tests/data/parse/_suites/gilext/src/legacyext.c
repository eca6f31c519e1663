#include <Python.h>
static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a + b);
}
static PyMethodDef methods[] = {{"add", add, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
/* No Py_mod_gil slot: a free-threaded interpreter re-enables the GIL on import. */
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "legacyext", NULL, -1, methods};
PyMODINIT_FUNC PyInit_legacyext(void) { return PyModule_Create(&mod); }
