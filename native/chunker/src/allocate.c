// allocate(fd, offset, length) -> 0 or errno: gives a range of a file its disk blocks without changing
// its size or its bytes (fallocate, FALLOC_FL_KEEP_SIZE). Node has no binding for fallocate. For
// SQLite's -shm files (engine/storage/wal-index-space.ts): SQLite maps them and grows them by writing
// one byte per 4 KiB page, which on a filesystem of 1 KiB blocks leaves three blocks of each page a
// hole; its first store into a hole on a full disk is a SIGBUS that kills the process. It lives in
// this addon, the engine's own (always built), rather than in native/fuse (mount mode only).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>

static napi_value allocate_js(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], out;
  int32_t fd = -1;
  double offset = 0, length = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_double(env, argv[1], &offset) != napi_ok ||
      napi_get_value_double(env, argv[2], &length) != napi_ok || offset < 0 || length <= 0) {
    napi_throw_type_error(env, NULL, "allocate(fd, offset, length)");
    return NULL;
  }
  int rc;
  do rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length) == 0 ? 0 : errno;
  while (rc == EINTR);
  if (napi_create_int32(env, rc, &out) != napi_ok) return NULL;
  return out;
}

napi_status define_allocate(napi_env env, napi_value exports) {
  napi_value fn;
  napi_status status = napi_create_function(env, "allocate", NAPI_AUTO_LENGTH, allocate_js, NULL, &fn);
  if (status != napi_ok) return status;
  return napi_set_named_property(env, exports, "allocate", fn);
}
