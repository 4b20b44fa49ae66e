/* Work shared out inside a parallel region without a barrier per loop (docs/compute.md, Sharing a CPU).

An OpenMP `for` gives each thread a fixed share and ends at a barrier every thread of the team must reach, so beside
another busy process each product of a decoder pass waited for whichever thread the scheduler had preempted. Here a
loop's items are claimed one at a time from a shared counter by whichever threads are running, and a thread that
runs out of items waits only until the items already claimed are done: a thread that was not scheduled claims
nothing, and when it runs again it finds the loops it missed finished and catches up without work. Which thread
computes which item never changes a result (every item's arithmetic is fixed by the item alone), so this moves time,
never bits.

Use, in a function that opens a region (every thread of the region walks the same loops in the same order):

    Claims claims = claims_make(loops);            before the region: `loops` claimable loops at most
    #pragma omp parallel num_threads(threads)
    { claims_join(&claims); ... claims_leave(); }
    claims_free(&claims);

and each shared loop, in that function or in what it calls:

    ClaimLoop loop = claim_loop(n);
    for (int i; (i = claim(&loop)) >= 0;) { ... }   (no `break` out of it: the claimed item would never be done)

Outside a joined region a loop runs every item on the calling thread. */
#ifndef ASR_SPECDEC_CLAIMS_H
#define ASR_SPECDEC_CLAIMS_H

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    atomic_int next; /* the next item to claim */
    atomic_int done; /* items finished */
    char pad[64 - 2 * sizeof(atomic_int)]; /* a cache line each: threads claiming one loop do not slow another's */
} Claim;

typedef struct {
    Claim *claims;
    int count;
} Claims;

typedef struct {
    Claim *claim; /* NULL: every item on this thread */
    int n, claimed, next; /* claimed: items this thread took, counted as done once it runs out */
} ClaimLoop;

/* this thread's region: its claims, how many loops it has walked, how many it may (defined in decoder_kernels.c) */
extern _Thread_local Claim *claims_here;
extern _Thread_local int claims_walked, claims_count;

#define CLAIM_SPINS 2048 /* pause-spins on an unfinished loop before yielding the CPU to whoever holds its items */

static inline void claim_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline Claims claims_make(int loops) {
    Claims claims = {aligned_alloc(64, (size_t)loops * sizeof(Claim)), loops};
    if (claims.claims == NULL) {
        fputs("asr_specdec native kernels: out of memory\n", stderr);
        abort();
    }
    memset(claims.claims, 0, (size_t)loops * sizeof(Claim));
    return claims;
}

static inline void claims_free(Claims *claims) { free(claims->claims); }

static inline void claims_join(const Claims *claims) {
    claims_here = claims->claims;
    claims_walked = 0;
    claims_count = claims->count;
}

static inline void claims_leave(void) { claims_here = NULL; }

static inline ClaimLoop claim_loop(int n) {
    ClaimLoop loop = {NULL, n, 0, 0};
    if (claims_here != NULL) {
        if (claims_walked >= claims_count) { /* a region opened with too few loops: a bug, never a wrong answer */
            fputs("asr_specdec native kernels: more shared loops than the region allows\n", stderr);
            abort();
        }
        loop.claim = claims_here + claims_walked++;
    }
    return loop;
}

/* The next item this thread computes, or -1 once every item of the loop is done (by any thread). */
static inline int claim(ClaimLoop *loop) {
    Claim *shared = loop->claim;
    if (shared == NULL) return loop->next < loop->n ? loop->next++ : -1;
    int item = atomic_fetch_add_explicit(&shared->next, 1, memory_order_relaxed);
    if (item < loop->n) {
        loop->claimed++;
        return item;
    }
    /* every item this thread took is done: one shared count for all of them (a count per item was another
       contended atomic per tile, ~1 ms of large-v3's decoder step) */
    if (loop->claimed) atomic_fetch_add_explicit(&shared->done, loop->claimed, memory_order_release);
    loop->claimed = 0;
    for (int spins = 0; atomic_load_explicit(&shared->done, memory_order_acquire) < loop->n; spins++) {
        if (spins < CLAIM_SPINS)
            claim_pause();
        else
            sched_yield();
    }
    return -1;
}

#endif
