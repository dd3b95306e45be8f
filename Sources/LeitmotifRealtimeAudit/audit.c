// See LeitmotifRealtimeAudit.h. glibc exports its allocator under __libc_* names, so the
// replacements call those directly (no dlsym on the allocation path, which could recurse);
// the other calls are looked up once with dlsym(RTLD_NEXT).
#define _GNU_SOURCE
#include "LeitmotifRealtimeAudit.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define LM_AUDIT_OFF 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define LM_AUDIT_OFF 1
#endif

#ifdef LM_AUDIT_OFF
// Under a sanitizer, which replaces the allocator itself, the audit stands aside.
void lm_audit_enter(void) {}
void lm_audit_leave(void) {}
void lm_audit_arm(int armed) { (void)armed; }
lm_audit_counts lm_audit_read(void) {
  lm_audit_counts none = {0, 0, 0, 0, 0, 0};
  return none;
}
int lm_audit_available(void) { return 0; }
#else
int lm_audit_available(void) { return 1; }

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <execinfo.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static __thread int audited;
static atomic_int armed;
static atomic_long allocations, frees, lockWaits, fileCalls, openALAllocations, openALLockWaits;

#define COUNTING (audited && atomic_load_explicit(&armed, memory_order_relaxed))

// Whether `address` (the allocation's caller) is code of OpenAL Soft: its allocations are counted
// apart (1.19 allocates a list item for every buffer queued on a source).
static int inOpenAL(void *address) {
  Dl_info info;
  return dladdr(address, &info) && info.dli_fname && strstr(info.dli_fname, "libopenal");
}

#define COUNT_ALLOCATION()                                                    \
  do {                                                                        \
    if (COUNTING) {                                                           \
      audited = 0;                                                            \
      int openAL = inOpenAL(__builtin_return_address(0));                     \
      audited = 1;                                                            \
      if (openAL) {                                                           \
        atomic_fetch_add(&openALAllocations, 1);                              \
      } else {                                                                \
        atomic_fetch_add(&allocations, 1);                                    \
        trace();                                                              \
      }                                                                       \
    }                                                                         \
  } while (0)

void lm_audit_enter(void) { audited = 1; }
void lm_audit_leave(void) { audited = 0; }

void lm_audit_arm(int on) {
  if (on) {
    atomic_store(&allocations, 0);
    atomic_store(&frees, 0);
    atomic_store(&lockWaits, 0);
    atomic_store(&fileCalls, 0);
    atomic_store(&openALAllocations, 0);
    atomic_store(&openALLockWaits, 0);
  }
  atomic_store(&armed, on);
}

lm_audit_counts lm_audit_read(void) {
  lm_audit_counts counts = {atomic_load(&allocations), atomic_load(&frees), atomic_load(&lockWaits),
                            atomic_load(&fileCalls), atomic_load(&openALAllocations),
                            atomic_load(&openALLockWaits)};
  return counts;
}

// LM_AUDIT_TRACE=N in the environment: the first N counted allocations print their stack.
static atomic_int traced;
static void trace(void) {
  static int limit = -1;
  if (limit < 0) {
    const char *value = getenv("LM_AUDIT_TRACE");
    limit = value ? atoi(value) : 0;
  }
  if (atomic_fetch_add(&traced, 1) >= limit) return;
  audited = 0;
  void *frames[24];
  int count = backtrace(frames, 24);
  const char line[] = "--- audited allocation\n";
  write(2, line, sizeof line - 1);
  backtrace_symbols_fd(frames, count, 2);
  audited = 1;
}

void *malloc(size_t size) {
  COUNT_ALLOCATION();
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  COUNT_ALLOCATION();
  return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
  COUNT_ALLOCATION();
  return __libc_realloc(pointer, size);
}

void free(void *pointer) {
  if (pointer && COUNTING) atomic_fetch_add(&frees, 1);
  __libc_free(pointer);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  COUNT_ALLOCATION();
  void *pointer = __libc_memalign(alignment, size);
  if (!pointer) return ENOMEM;
  *out = pointer;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
  COUNT_ALLOCATION();
  return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
  COUNT_ALLOCATION();
  return __libc_memalign(alignment, size);
}

int pthread_mutex_lock(pthread_mutex_t *mutex) {
  static int (*real)(pthread_mutex_t *);
  if (!real) real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
  if (COUNTING) {
    if (pthread_mutex_trylock(mutex) == 0) return 0;
    audited = 0;
    int openAL = inOpenAL(__builtin_return_address(0));
    audited = 1;
    atomic_fetch_add(openAL ? &openALLockWaits : &lockWaits, 1);
  }
  return real(mutex);
}

long syscall(long number, ...) {
  static long (*real)(long, ...);
  if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  va_list list;
  va_start(list, number);
  long a = va_arg(list, long), b = va_arg(list, long), c = va_arg(list, long);
  long d = va_arg(list, long), e = va_arg(list, long), f = va_arg(list, long);
  va_end(list);
  if (number == SYS_futex && COUNTING) {
    int op = (int)b & FUTEX_CMD_MASK;
    if (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET || op == FUTEX_LOCK_PI || op == FUTEX_LOCK_PI2)
      atomic_fetch_add(&lockWaits, 1);
  }
  return real(number, a, b, c, d, e, f);
}

#define FILE_CALL(name, type, params, args)                          \
  type name params {                                                 \
    static type(*real) params;                                       \
    if (!real) real = (type(*) params)dlsym(RTLD_NEXT, #name);       \
    if (COUNTING) atomic_fetch_add(&fileCalls, 1);                   \
    return real args;                                                \
  }

FILE_CALL(read, ssize_t, (int fd, void *buffer, size_t count), (fd, buffer, count))
FILE_CALL(write, ssize_t, (int fd, const void *buffer, size_t count), (fd, buffer, count))
FILE_CALL(pread, ssize_t, (int fd, void *buffer, size_t count, off_t offset), (fd, buffer, count, offset))
FILE_CALL(fopen, FILE *, (const char *path, const char *mode), (path, mode))

int open(const char *path, int flags, ...) {
  static int (*real)(const char *, int, ...);
  if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  va_list list;
  va_start(list, flags);
  int mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(list, int) : 0;
  va_end(list);
  if (COUNTING) atomic_fetch_add(&fileCalls, 1);
  return real(path, flags, mode);
}

int openat(int directory, const char *path, int flags, ...) {
  static int (*real)(int, const char *, int, ...);
  if (!real) real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
  va_list list;
  va_start(list, flags);
  int mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(list, int) : 0;
  va_end(list);
  if (COUNTING) atomic_fetch_add(&fileCalls, 1);
  return real(directory, path, flags, mode);
}
#endif
