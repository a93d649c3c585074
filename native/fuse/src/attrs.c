// Attributes the C side may answer by itself, without a trip into JS.
//
// Why (measured, docs/benchmarks.md): tar extracts each file as lookup, create, write, utimens,
// getattr, chown, chmod, flush, release. The getattr (the kernel's, before every fchown) and the
// chown/chmod that change nothing Strata stores cost a full JS dispatch each (~3 of ~11 requests per
// file), for an answer JS already gave: the attributes of the file it just created or touched.
//
// Coherence: JS marks a file's attribute replies cacheable (ops-attr.ts): a file's attributes change
// only through requests on its own inode, through a rename (fuse-lowlevel.ts drops both inodes
// then), or behind the mount's back (a restore, a sync pull: JS drops the inode, MountState
// forgetInKernel, which the namespace's look for other processes' changes every second calls too).
// No entry is answered from for more than MAX_AGE_S all the same, a bound on what a missed change
// costs (it matches the kernel's name cache). So:
// - every request about an inode that goes to JS makes its cached attributes invalid, and counts as
//   in flight until its reply;
// - a reply fills the cache only when no other request about that inode is in flight (a reply computed
//   while a write was still running would not include it);
// - forget, and JS (attrDrop), drop an entry.
#include "fuse_ll.h"

#define BUCKETS 4096u
#define MAX_AGE_S 60.0

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct attr_entry {
  fuse_ino_t ino;
  unsigned inflight;
  int valid;
  double timeout;
  double filled;  // CLOCK_MONOTONIC_COARSE seconds
  struct stat st;
  struct attr_entry *next;
} attr_entry;

struct attr_table {
  attr_entry *buckets[BUCKETS];
};

attr_table_t *attr_table_new(void) { return calloc(1, sizeof(attr_table_t)); }

void attr_table_free(attr_table_t *t) {
  if (t == NULL) return;
  for (unsigned i = 0; i < BUCKETS; i++) {
    for (attr_entry *e = t->buckets[i]; e != NULL;) {
      attr_entry *next = e->next;
      free(e);
      e = next;
    }
  }
  free(t);
}

static attr_entry *find(attr_table_t *t, fuse_ino_t ino, attr_entry ***link_out) {
  attr_entry **link = &t->buckets[ino & (BUCKETS - 1)];
  while (*link != NULL && (*link)->ino != ino) link = &(*link)->next;
  if (link_out != NULL) *link_out = link;
  return *link;
}

// An entry that holds nothing (not valid, nothing in flight) is freed.
static void settle(attr_entry **link) {
  attr_entry *e = *link;
  if (e->valid || e->inflight > 0) return;
  *link = e->next;
  free(e);
}

void attr_forwarded(attr_table_t *t, fuse_ino_t ino) {
  if (t == NULL) return;
  attr_entry **link;
  attr_entry *e = find(t, ino, &link);
  if (e == NULL) {
    e = calloc(1, sizeof *e);
    if (e == NULL) return;  // no entry: nothing can be cached for it either (fill needs one)
    e->ino = ino;
    e->next = NULL;
    *link = e;
  }
  e->valid = 0;
  e->inflight += 1;
}

void attr_answered(attr_table_t *t, fuse_ino_t ino) {
  if (t == NULL) return;
  attr_entry **link;
  attr_entry *e = find(t, ino, &link);
  if (e == NULL) return;
  if (e->inflight > 0) e->inflight -= 1;
  settle(link);
}

void attr_fill(attr_table_t *t, fuse_ino_t ino, const struct stat *st, double timeout) {
  if (t == NULL) return;
  attr_entry **link;
  attr_entry *e = find(t, ino, &link);
  if (e != NULL && e->inflight > 0) return;
  if (e == NULL) {
    e = calloc(1, sizeof *e);
    if (e == NULL) return;
    e->ino = ino;
    e->next = NULL;
    *link = e;
  }
  e->st = *st;
  e->timeout = timeout;
  e->filled = now_s();
  e->valid = 1;
}

void attr_drop(attr_table_t *t, fuse_ino_t ino) {
  if (t == NULL) return;
  attr_entry **link;
  attr_entry *e = find(t, ino, &link);
  if (e == NULL) return;
  e->valid = 0;
  settle(link);
}

const struct stat *attr_get(attr_table_t *t, fuse_ino_t ino, double *timeout) {
  if (t == NULL) return NULL;
  attr_entry *e = find(t, ino, NULL);
  if (e == NULL || !e->valid) return NULL;
  if (now_s() - e->filled > MAX_AGE_S) return NULL;
  *timeout = e->timeout;
  return &e->st;
}

// attrDrop(handle, ino): JS no longer vouches for what it said about `ino` (an external change).
static napi_value js_attr_drop(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = mount_of(env, argv[0]);
  if (m == NULL || m->destroyed) return NULL;
  double ino = 0;
  napi_get_value_double(env, argv[1], &ino);
  attr_drop(m->attrs, (fuse_ino_t)ino);
  return NULL;
}

// answered(handle) -> [getattr, setattr, write, setattr-times, hand-overs, flush, read]: requests
// answered from the attribute cache, by write_behind.c and by read_maps.c, without JS; and
// write_behind.c's hand-overs to JS.
static napi_value js_answered(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out, v;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = mount_of(env, argv[0]);
  if (m == NULL) return NULL;
  double counts[7] = {m->answered[0], m->answered[1], m->wb_counts[0], m->wb_counts[1], m->wb_counts[2], m->wb_counts[3], m->maps_read};
  CHECK(napi_create_array_with_length(env, 7, &out));
  for (uint32_t i = 0; i < 7; i++) {
    CHECK(napi_create_double(env, m->destroyed ? 0 : counts[i], &v));
    CHECK(napi_set_element(env, out, i, v));
  }
  return out;
}

void define_attr_exports(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"attrDrop", NULL, js_attr_drop, NULL, NULL, NULL, napi_enumerable, NULL},
    {"answered", NULL, js_answered, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
