// lockRange(fd, start, length, mode) -> 0 or errno; lockTest(fd, start, length, mode) -> 0 or errno.
// Open-file-description locks (fcntl F_OFD_SETLK / F_OFD_GETLK, Linux 3.15+), never waiting. Node has
// no fcntl binding. For the home's claim (server/home-claim.ts): a home must be used from one host at a
// time, and the filesystem's own locks are the strongest proof of that where they work across hosts
// (NFS forwards them to the server, through NLM or NFSv4 state). OFD rather than classic POSIX locks:
// a classic lock belongs to the process and is dropped when ANY descriptor of the file closes (SQLite
// works around that at length); an OFD lock belongs to the descriptor that took it, conflicts with
// other descriptors even in this process, and goes when that descriptor closes or the process dies.
// mode: 0 unlock, 1 shared (F_RDLCK), 2 exclusive (F_WRLCK). EAGAIN/EACCES: another holder conflicts;
// ENOLCK, EOPNOTSUPP, ENOSYS, EINVAL: the filesystem (or kernel) does not lock.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <string.h>

static int parse(napi_env env, napi_callback_info info, int32_t *fd, double *start, double *length, int32_t *mode, const char *usage) {
  size_t argc = 4;
  napi_value argv[4];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4 || napi_get_value_int32(env, argv[0], fd) != napi_ok ||
      napi_get_value_double(env, argv[1], start) != napi_ok || napi_get_value_double(env, argv[2], length) != napi_ok ||
      napi_get_value_int32(env, argv[3], mode) != napi_ok || *start < 0 || *length <= 0 || *mode < 0 || *mode > 2) {
    napi_throw_type_error(env, NULL, usage);
    return 0;
  }
  return 1;
}

static void fill(struct flock *lock, double start, double length, int32_t mode) {
  memset(lock, 0, sizeof *lock);
  lock->l_type = mode == 0 ? F_UNLCK : mode == 1 ? F_RDLCK : F_WRLCK;
  lock->l_whence = SEEK_SET;
  lock->l_start = (off_t)start;
  lock->l_len = (off_t)length;
  lock->l_pid = 0;  // must be 0 for OFD locks
}

static napi_value result(napi_env env, int rc) {
  napi_value out;
  if (napi_create_int32(env, rc, &out) != napi_ok) return NULL;
  return out;
}

static napi_value lock_range_js(napi_env env, napi_callback_info info) {
  int32_t fd, mode;
  double start, length;
  if (!parse(env, info, &fd, &start, &length, &mode, "lockRange(fd, start, length, mode)")) return NULL;
  struct flock lock;
  fill(&lock, start, length, mode);
  int rc;
  do rc = fcntl(fd, F_OFD_SETLK, &lock) == 0 ? 0 : errno;
  while (rc == EINTR);
  return result(env, rc == EACCES ? EAGAIN : rc);
}

// Whether a lock of `mode` could be taken now: 0, or EAGAIN when another holder conflicts.
static napi_value lock_test_js(napi_env env, napi_callback_info info) {
  int32_t fd, mode;
  double start, length;
  if (!parse(env, info, &fd, &start, &length, &mode, "lockTest(fd, start, length, mode)")) return NULL;
  if (mode == 0) return result(env, 0);
  struct flock lock;
  fill(&lock, start, length, mode);
  int rc;
  do rc = fcntl(fd, F_OFD_GETLK, &lock) == 0 ? 0 : errno;
  while (rc == EINTR);
  if (rc == 0 && lock.l_type != F_UNLCK) rc = EAGAIN;
  return result(env, rc);
}

napi_status define_lock(napi_env env, napi_value exports) {
  napi_value fn;
  napi_status status = napi_create_function(env, "lockRange", NAPI_AUTO_LENGTH, lock_range_js, NULL, &fn);
  if (status != napi_ok) return status;
  status = napi_set_named_property(env, exports, "lockRange", fn);
  if (status != napi_ok) return status;
  status = napi_create_function(env, "lockTest", NAPI_AUTO_LENGTH, lock_test_js, NULL, &fn);
  if (status != napi_ok) return status;
  return napi_set_named_property(env, exports, "lockTest", fn);
}
