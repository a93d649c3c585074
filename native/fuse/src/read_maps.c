// Reads of stored content served without JS. A handle reading a file's unchanged stored content (a
// large file's object, or a dataset's shards in the store's pack files) is mapped here by JS after
// its first read: the content as spans of local files. Each later READ of the handle is a positional
// read on libuv's thread pool, answered from that thread (libfuse's replies are thread-safe: they are
// one writev on /dev/fuse). Measured before (bench/mount-io.ts, 2 GiB cold): 412 us of JS per 128 KiB
// read, half of it waiting for the thread pool, and a new 128 KiB Buffer per read for the GC.
//
// JS unmaps a handle when the node's content or base changes (file-node.ts), and on release. A map is
// counted: reads in flight keep its descriptors (dup'ed here, so JS closes its own) until they finish.
#include <unistd.h>

#include "fuse_ll.h"

typedef struct {
  int fd;
  double file_offset;  // where the span starts in its file
  double start;        // where it starts in the content
  double size;
} span_t;

typedef struct content_map {
  int refs;
  unsigned nspans;
  double size;
  span_t spans[];
} content_map_t;

struct map_slot {
  uint64_t fh;
  content_map_t *map;
};

typedef struct {
  uv_work_t work;
  mount_t *m;
  fuse_req_t req;
  content_map_t *map;
  size_t size;
  off_t off;
} read_job_t;

static void map_unref(content_map_t *map) {
  if (--map->refs > 0) return;
  for (unsigned i = 0; i < map->nspans; i++) close(map->spans[i].fd);
  free(map);
}

static content_map_t *map_of(mount_t *m, uint64_t fh) {
  for (unsigned i = 0; i < m->nmaps; i++)
    if (m->maps[i].fh == fh) return m->maps[i].map;
  return NULL;
}

static void map_remove(mount_t *m, uint64_t fh) {
  for (unsigned i = 0; i < m->nmaps; i++) {
    if (m->maps[i].fh != fh) continue;
    map_unref(m->maps[i].map);
    m->maps[i] = m->maps[--m->nmaps];
    return;
  }
}

// The first span that holds content offset `pos` (spans are in content order).
static unsigned span_at(const content_map_t *map, double pos) {
  unsigned lo = 0, hi = map->nspans;
  while (hi - lo > 1) {
    unsigned mid = lo + (hi - lo) / 2;
    if (map->spans[mid].start <= pos) lo = mid;
    else hi = mid;
  }
  return lo;
}

// Each pool thread's read buffer, kept: a fresh 1 MiB malloc is an mmap, page faults and an munmap
// per read (glibc maps allocations above 128 KiB).
static __thread char *thread_buf = NULL;
static __thread size_t thread_cap = 0;

static char *buffer_for(size_t size) {
  if (size > thread_cap) {
    free(thread_buf);
    thread_buf = malloc(size);
    thread_cap = thread_buf == NULL ? 0 : size;
  }
  return thread_buf;
}

// On a thread-pool thread: the bytes, then the reply.
static void read_execute(uv_work_t *work) {
  read_job_t *job = work->data;
  const content_map_t *map = job->map;
  double pos = (double)job->off;
  size_t want = pos >= map->size ? 0 : (size_t)fmin((double)job->size, map->size - pos);
  char *buf = want == 0 ? NULL : buffer_for(want);
  if (want > 0 && buf == NULL) {
    fuse_reply_err(job->req, ENOMEM);
    return;
  }
  size_t done = 0;
  for (unsigned i = span_at(map, pos); done < want && i < map->nspans; i++) {
    const span_t *span = &map->spans[i];
    double from = pos + (double)done - span->start;
    if (from < 0 || from >= span->size) continue;
    size_t piece = (size_t)fmin((double)(want - done), span->size - from);
    while (piece > 0) {
      ssize_t n = pread(span->fd, buf + done, piece, (off_t)(span->file_offset + from));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fuse_reply_err(job->req, n < 0 ? errno : EIO);  // EIO: an object shorter than its record says
        return;
      }
      done += (size_t)n, piece -= (size_t)n, from += (double)n;
    }
  }
  fuse_reply_buf(job->req, buf, done);
}

// Back on the JS thread: the map and the mount may go now.
static void read_complete(uv_work_t *work, int status) {
  (void)status;
  read_job_t *job = work->data;
  mount_t *m = job->m;
  map_unref(job->map);
  free(job);
  m->inflight -= 1;
  maybe_free(m);
}

int maps_read(mount_t *m, fuse_req_t req, uint64_t fh, size_t size, off_t off) {
  content_map_t *map = m->nmaps == 0 ? NULL : map_of(m, fh);
  if (map == NULL) return 0;
  read_job_t *job = malloc(sizeof *job);
  uv_loop_t *loop;
  if (job == NULL || napi_get_uv_event_loop(m->env, &loop) != napi_ok) {
    free(job);
    return 0;
  }
  *job = (read_job_t){.m = m, .req = req, .map = map, .size = size, .off = off};
  job->work.data = job;
  map->refs += 1;
  m->inflight += 1;
  m->maps_read += 1;
  uv_queue_work(loop, &job->work, read_execute, read_complete);
  return 1;
}

void maps_free_all(mount_t *m) {
  while (m->nmaps > 0) map_remove(m, m->maps[0].fh);
  free(m->maps);
  m->maps = NULL;
  m->capmaps = 0;
}

// readMap(handle, fh, spans: Float64Array [fd, fileOffset, size]*, size) -> 0 or -errno. The spans are
// the content in order; their descriptors stay JS's (dup'ed here).
static napi_value js_read_map(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], out;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = argc < 4 ? NULL : mount_of(env, argv[0]);
  if (m == NULL) return NULL;
  double fh = 0, size = 0;
  napi_typedarray_type type;
  size_t length = 0;
  void *data = NULL;
  napi_get_value_double(env, argv[1], &fh);
  napi_get_value_double(env, argv[3], &size);
  if (napi_get_typedarray_info(env, argv[2], &type, &length, &data, NULL, NULL) != napi_ok || type != napi_float64_array || length % 3 != 0 || length == 0) {
    napi_throw_type_error(env, NULL, "readMap(handle, fh, spans: Float64Array of [fd, offset, size], size)");
    return NULL;
  }
  int result = 0;
  unsigned nspans = (unsigned)(length / 3);
  content_map_t *map = m->destroyed ? NULL : calloc(1, sizeof *map + nspans * sizeof(span_t));
  if (map == NULL) result = m->destroyed ? -ENOTCONN : -ENOMEM;
  if (result == 0 && m->nmaps == m->capmaps) {
    unsigned cap = m->capmaps == 0 ? 16 : m->capmaps * 2;
    struct map_slot *grown = realloc(m->maps, cap * sizeof *grown);
    if (grown == NULL) result = -ENOMEM;
    else m->maps = grown, m->capmaps = cap;
  }
  const double *in = data;
  double start = 0;
  for (unsigned i = 0; result == 0 && i < nspans; i++) {
    int fd = fcntl((int)in[i * 3], F_DUPFD_CLOEXEC, 0);
    if (fd < 0) result = -errno;
    else {
      // Reads of one handle are mostly sequential: the disk's readahead on the store's file doubles.
      posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
      map->spans[i] = (span_t){.fd = fd, .file_offset = in[i * 3 + 1], .start = start, .size = in[i * 3 + 2]};
      map->nspans = i + 1;
      start += in[i * 3 + 2];
    }
  }
  if (result == 0) {
    map->refs = 1;
    map->size = size;
    map_remove(m, (uint64_t)fh);  // a map left for a reused handle number
    m->maps[m->nmaps++] = (struct map_slot){(uint64_t)fh, map};
  } else if (map != NULL) {
    for (unsigned i = 0; i < map->nspans; i++) close(map->spans[i].fd);
    free(map);
  }
  CHECK(napi_create_int32(env, result, &out));
  return out;
}

// readUnmap(handle, fh): later reads of fh go to JS again.
static napi_value js_read_unmap(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = argc < 2 ? NULL : mount_of(env, argv[0]);
  if (m == NULL) return NULL;
  double fh = 0;
  napi_get_value_double(env, argv[1], &fh);
  map_remove(m, (uint64_t)fh);
  return NULL;
}

void define_read_map_exports(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"readMap", NULL, js_read_map, NULL, NULL, NULL, napi_enumerable, NULL},
    {"readUnmap", NULL, js_read_unmap, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
