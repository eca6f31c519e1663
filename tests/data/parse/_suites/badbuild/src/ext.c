#include <Python.h>
#ifdef Py_GIL_DISABLED
#error "badbuild does not support the free-threaded build"
#endif
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&mod); }
