/* The decoder's threads: a pool of the project's own instead of OpenMP's (docs/compute.md, Sharing a CPU).

Between two kernel calls of a decoder step (Python runs in between) OpenMP's idle threads spin for up to
GOMP_SPINCOUNT iterations (milliseconds on a recent x86) before they sleep, so beside another busy process the
team held its CPU share doing nothing: measured, passes that need 2.8 CPU-seconds at one thread took 3.8 beside a
2-thread faster-whisper loop, and 2.9 with GOMP_SPINCOUNT=10000 (which a library cannot set: libgomp reads it once,
when torch loads it). Here an idle worker spins for IDLE_SPIN_NS, then sleeps on a condition variable; the call
that finds it asleep wakes it. A call's loops are claimed item by item (claims.h), so the caller never waits for a
worker that was not scheduled: a worker joins a call only while it is open, and the caller, once every item is
done, closes it and waits only for the workers that joined (each about to find every loop finished).

One call at a time uses the pool; a second caller (another Python thread decoding at the same moment) runs its
call on its own thread, with the same results (which thread computes which item never changes a bit). */
#include "kernels.h"

#ifdef _OPENMP
#include <pthread.h>
#include <time.h>

#define MAX_WORKERS 255
#define IDLE_SPIN_NS 100000L /* an idle worker's spin before it sleeps: the gaps between a step's kernel calls */
#define CLOSED 0x80000000u   /* in Call.state: no worker may join any more */

typedef struct {
    TeamBody body;
    void *context;
    const Claims *claims;
    int threads;
    atomic_uint state;  /* workers joined, | CLOSED once the caller has seen every item done */
    atomic_uint left;   /* workers that joined and have finished */
    atomic_ulong number; /* which call this is (0: none yet); workers wait for it to change */
} Call;

static Call call;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* held by the call using the pool */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int sleepers, workers; /* under sleep_lock; workers: threads started (they never exit) */
static _Thread_local int team_index;

int team_thread(void) { return team_index; }

static long now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000000000L + now.tv_nsec;
}

static unsigned long next_call(unsigned long seen) {
    unsigned long number;
    long until = now_ns() + IDLE_SPIN_NS;
    for (int spins = 0; (number = atomic_load_explicit(&call.number, memory_order_acquire)) == seen; spins++) {
        claim_pause();
        if (spins % 64 == 63 && now_ns() > until) {
            pthread_mutex_lock(&sleep_lock);
            sleepers++;
            while ((number = atomic_load_explicit(&call.number, memory_order_acquire)) == seen)
                pthread_cond_wait(&wake, &sleep_lock);
            sleepers--;
            pthread_mutex_unlock(&sleep_lock);
            return number;
        }
    }
    return number;
}

static void *worker_main(void *argument) {
    const int index = (int)(intptr_t)argument;
    unsigned long seen = 0;
    for (;;) {
        seen = next_call(seen);
        unsigned state = atomic_load_explicit(&call.state, memory_order_relaxed);
        do {
            if (state & CLOSED) break;
        } while (!atomic_compare_exchange_weak_explicit(&call.state, &state, state + 1, memory_order_acquire,
                                                        memory_order_relaxed));
        if (state & CLOSED) continue;
        /* joined: the call's fields stay until this worker has left (the caller waits for it); it may be a later
           call than `seen` (the one it woke for ended first), which it serves the same way */
        if (index < call.threads) {
            team_index = index;
            claims_join(call.claims);
            call.body(call.context);
            claims_leave();
        }
        atomic_fetch_add_explicit(&call.left, 1, memory_order_release);
    }
    return NULL;
}

static void after_fork(void) { /* the child has none of the parent's threads, and no lock is held in it */
    workers = sleepers = 0;
    pthread_mutex_init(&pool_lock, NULL);
    pthread_mutex_init(&sleep_lock, NULL);
    pthread_cond_init(&wake, NULL);
}

static void at_fork(void) { pthread_atfork(NULL, NULL, after_fork); }

static void start_workers(int wanted) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, at_fork);
    pthread_mutex_lock(&sleep_lock);
    while (workers < wanted && workers < MAX_WORKERS) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, worker_main, (void *)(intptr_t)(workers + 1)) != 0) break;
        pthread_detach(thread);
        workers++;
    }
    pthread_mutex_unlock(&sleep_lock);
}

void team_run(int threads, TeamBody body, void *context, int loops) {
    Claims claims = claims_make(loops);
    if (threads > 1 && pthread_mutex_trylock(&pool_lock) == 0) {
        start_workers(threads - 1);
        call.body = body;
        call.context = context;
        call.claims = &claims;
        call.threads = threads;
        atomic_store_explicit(&call.left, 0, memory_order_relaxed);
        atomic_store_explicit(&call.state, 0, memory_order_release); /* a worker joining sees the fields above */
        atomic_fetch_add_explicit(&call.number, 1, memory_order_release);
        pthread_mutex_lock(&sleep_lock);
        if (sleepers) pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_lock);
        team_index = 0;
        claims_join(&claims);
        body(context);
        claims_leave();
        const unsigned joined = atomic_fetch_or_explicit(&call.state, CLOSED, memory_order_acq_rel) & ~CLOSED;
        for (int spins = 0; atomic_load_explicit(&call.left, memory_order_acquire) < joined; spins++) {
            if (spins < CLAIM_SPINS)
                claim_pause();
            else
                sched_yield();
        }
        pthread_mutex_unlock(&pool_lock);
    } else {
        team_index = 0;
        claims_join(&claims);
        body(context);
        claims_leave();
    }
    claims_free(&claims);
}

#else /* without OpenMP the kernels are single-threaded (native/__init__.py says so) */

int team_thread(void) { return 0; }

void team_run(int threads, TeamBody body, void *context, int loops) {
    (void)threads;
    Claims claims = claims_make(loops);
    claims_join(&claims);
    body(context);
    claims_leave();
    claims_free(&claims);
}

#endif
