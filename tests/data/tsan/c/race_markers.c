#include <pthread.h>
#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>
void __sanitizer_set_report_fd(void *fd);
static long counter;
static void *w(void *p) { for (int i = 0; i < 1000; i++) counter++; return NULL; }
static void mark(int fd, const char *s) { write(fd, s, strlen(s)); }
int main(void) {
  char path[256]; snprintf(path, sizeof path, "%s.%d", getenv("LP"), getpid());
  int fd = open(path, O_WRONLY|O_CREAT|O_APPEND, 0644);
  __sanitizer_set_report_fd((void*)(long)fd);
  mark(fd, "ft-harness: test start a\n");
  pthread_t t1, t2; pthread_create(&t1, 0, w, 0); pthread_create(&t2, 0, w, 0);
  pthread_join(t1, 0); pthread_join(t2, 0);
  mark(fd, "ft-harness: test end a\n");
  mark(fd, "ft-harness: test start b\n");
  pthread_create(&t1, 0, w, 0); pthread_create(&t2, 0, w, 0);
  pthread_join(t1, 0); pthread_join(t2, 0);
  mark(fd, "ft-harness: test end b\n");
  return 0;
}
