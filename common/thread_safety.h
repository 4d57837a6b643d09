// Clang's thread-safety attributes (-Wthread-safety), so the compiler checks who holds which
// lock: a member GUARDED_BY a capability is read or written only with it held, a function that
// REQUIRES it is called only with it held. Under another compiler they say nothing. The clang
// builds (the fuzz tree, the thread_safety test) compile with -Wthread-safety -Werror.
// https://clang.llvm.org/docs/ThreadSafetyAnalysis.html
#pragma once

#include <mutex>

#if defined(__clang__)
#define BF_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define BF_THREAD_ANNOTATION(x)
#endif

#define BF_CAPABILITY(name) BF_THREAD_ANNOTATION(capability(name))
#define BF_SCOPED_CAPABILITY BF_THREAD_ANNOTATION(scoped_lockable)
#define BF_GUARDED_BY(x) BF_THREAD_ANNOTATION(guarded_by(x))
#define BF_REQUIRES(...) BF_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define BF_ACQUIRE(...) BF_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define BF_RELEASE(...) BF_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define BF_ASSERT_CAPABILITY(x) BF_THREAD_ANNOTATION(assert_capability(x))
#define BF_EXCLUDES(...) BF_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define BF_RETURN_CAPABILITY(x) BF_THREAD_ANNOTATION(lock_returned(x))
#define BF_NO_THREAD_SAFETY_ANALYSIS BF_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace benchfleet {

// std::mutex as a capability the analysis knows (libstdc++'s is not annotated).
class BF_CAPABILITY("mutex") Mutex {
 public:
  void lock() BF_ACQUIRE() { mu_.lock(); }
  void unlock() BF_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::lock_guard, annotated).
class BF_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) BF_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() BF_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace benchfleet
