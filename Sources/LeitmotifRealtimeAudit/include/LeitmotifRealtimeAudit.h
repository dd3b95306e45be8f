// Counts what a thread does that a real-time thread must not: allocate, wait on a lock, do file
// I/O. Linked into the test executable only; it replaces malloc and friends, pthread_mutex_lock,
// syscall (futex waits) and the file calls for the whole process, forwarding each to glibc, and
// counts them on the threads that called lm_audit_enter (until lm_audit_leave).
#ifndef LEITMOTIF_REALTIME_AUDIT_H
#define LEITMOTIF_REALTIME_AUDIT_H

typedef struct {
  long allocations;  // malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign
  long frees;        // free
  long lockWaits;    // pthread_mutex_lock that found the mutex taken; futex waits
  long fileCalls;    // open, openat, read, write, pread, fopen
  long openALAllocations;  // allocations made by OpenAL Soft's own code (counted apart)
  long openALLockWaits;    // lock waits inside OpenAL Soft (its process-wide device list lock)
} lm_audit_counts;

// The calling thread is audited from now on (counted while the audit is armed).
void lm_audit_enter(void);
void lm_audit_leave(void);
// Starts (resetting the counts) or stops counting.
void lm_audit_arm(int armed);
lm_audit_counts lm_audit_read(void);
// 0 under a sanitizer (which replaces the allocator itself): then nothing is counted.
int lm_audit_available(void);

#endif
