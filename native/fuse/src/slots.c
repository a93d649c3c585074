// The requests JS still owes an answer, by slot: a request travels to JS as a number (its slot and the
// slot's generation), and JS's reply finds the request again by it (replies.c).
#include "fuse_ll.h"

// A request id is generation * 2^20 + slot: a late or duplicate reply to a reused slot is ignored
// instead of answering someone else's request.
#define SLOT_BITS 20
static fuse_req_t *g_reqs = NULL;
static double *g_gen = NULL;
static double *g_started = NULL;
static double *g_ino = NULL;   // the inode each request is about (attrs.c counts it in flight)
static unsigned *g_free = NULL;
static unsigned g_cap = 0, g_nfree = 0;

static double coarse_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

double slot_put(fuse_req_t req, double ino) {
  if (g_nfree == 0) {
    unsigned cap = g_cap == 0 ? 64 : g_cap * 2;
    if (cap > (1u << SLOT_BITS)) return -1;
    fuse_req_t *reqs = realloc(g_reqs, cap * sizeof *reqs);
    if (reqs == NULL) return -1;
    g_reqs = reqs;
    double *gen = realloc(g_gen, cap * sizeof *gen);
    if (gen == NULL) return -1;
    g_gen = gen;
    double *started = realloc(g_started, cap * sizeof *started);
    if (started == NULL) return -1;
    g_started = started;
    double *inos = realloc(g_ino, cap * sizeof *inos);
    if (inos == NULL) return -1;
    g_ino = inos;
    unsigned *fr = realloc(g_free, cap * sizeof *fr);
    if (fr == NULL) return -1;
    g_free = fr;
    for (unsigned i = cap; i > g_cap; i--) {
      g_reqs[i - 1] = NULL;
      g_gen[i - 1] = 0;
      g_free[g_nfree++] = i - 1;
    }
    g_cap = cap;
  }
  unsigned slot = g_free[--g_nfree];
  g_reqs[slot] = req;
  g_gen[slot] += 1;
  g_started[slot] = coarse_ms();
  g_ino[slot] = ino;
  return g_gen[slot] * (double)(1u << SLOT_BITS) + slot;
}

fuse_req_t slot_take(double id) {
  if (!(id >= 0)) return NULL;
  double gen = floor(id / (double)(1u << SLOT_BITS));
  unsigned slot = (unsigned)(id - gen * (double)(1u << SLOT_BITS));
  if (slot >= g_cap || g_reqs[slot] == NULL || g_gen[slot] != gen) return NULL;
  fuse_req_t req = g_reqs[slot];
  g_reqs[slot] = NULL;
  g_free[g_nfree++] = slot;
  attr_answered(((mount_t *)fuse_req_userdata(req))->attrs, (fuse_ino_t)g_ino[slot]);
  return req;
}

// Fails (EIO) every request of `m` waiting longer than `older_than_ms` (-1: all of them).
void slots_fail(mount_t *m, double older_than_ms) {
  double limit = older_than_ms < 0 ? INFINITY : coarse_ms() - older_than_ms;
  for (unsigned slot = 0; slot < g_cap; slot++) {
    fuse_req_t req = g_reqs[slot];
    if (req == NULL || g_started[slot] > limit || fuse_req_userdata(req) != m) continue;
    g_reqs[slot] = NULL;
    g_free[g_nfree++] = slot;
    attr_answered(m->attrs, (fuse_ino_t)g_ino[slot]);
    fuse_reply_err(req, EIO);
  }
}
