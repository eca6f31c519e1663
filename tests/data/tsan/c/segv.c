#include <pthread.h>
static void *crash(void *p) { *(volatile int *)p = 1; return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, crash, 0); pthread_join(t, 0); return 0; }
