#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static void *late_reader(void *p) { usleep(20000); volatile int x = ((int *)p)[1]; (void)x; return NULL; }
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static void ab(void) { pthread_mutex_lock(&a); pthread_mutex_lock(&b); pthread_mutex_unlock(&b); pthread_mutex_unlock(&a); }
static void ba(void) { pthread_mutex_lock(&b); pthread_mutex_lock(&a); pthread_mutex_unlock(&a); pthread_mutex_unlock(&b); }
int main(void) {
  int *buf = malloc(64); pthread_t t;
  pthread_create(&t, NULL, late_reader, buf); free(buf); pthread_join(t, NULL);
  ab(); ba();
  return 0;
}
