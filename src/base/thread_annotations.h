// Clang's thread-safety annotations (-Wthread-safety): which mutex guards a
// member, which a function needs held, which it takes. Other compilers see
// nothing. The `thread-safety` preset builds the library and the tool with
// clang and these warnings as errors (a CI step); base/mutex.h holds the
// annotated mutexes they name.
#pragma once

#if defined(__clang__)
#define KCACHE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KCACHE_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (a mutex).
#define CAPABILITY(x) KCACHE_THREAD_ANNOTATION(capability(x))
// A type whose object holds a lock for its lifetime (a scoped lock).
#define SCOPED_CAPABILITY KCACHE_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the mutex held.
#define GUARDED_BY(x) KCACHE_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is read or written only with the mutex held.
#define PT_GUARDED_BY(x) KCACHE_THREAD_ANNOTATION(pt_guarded_by(x))
// A function called with the mutex held (exclusively; or at least shared).
#define REQUIRES(...) KCACHE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) KCACHE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// A function that takes (or gives back) the mutex.
#define ACQUIRE(...) KCACHE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) KCACHE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) KCACHE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) KCACHE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) KCACHE_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) KCACHE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// A function that must not be called with the mutex held (it takes it).
#define EXCLUDES(...) KCACHE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that returns a reference to the mutex.
#define RETURN_CAPABILITY(x) KCACHE_THREAD_ANNOTATION(lock_returned(x))
// Says the mutex is held where the analysis cannot see it (asserted by the caller).
#define ASSERT_CAPABILITY(x) KCACHE_THREAD_ANNOTATION(assert_capability(x))
// Turns the analysis off for one function: the reason goes in a comment.
#define NO_THREAD_SAFETY_ANALYSIS KCACHE_THREAD_ANNOTATION(no_thread_safety_analysis)
