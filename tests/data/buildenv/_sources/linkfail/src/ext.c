#include <Python.h>

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&module); }
