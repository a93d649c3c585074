# Built by scripts/env.sh (node-gyp, bundled with npm) whenever build/Release/strata_fuse.node is missing
# or older than this file or src/. Links libfuse3 (Debian: libfuse3-dev to build, libfuse3-3 to run).
# Uses N-API plus libuv's uv_poll (uv.h ships with Node's headers): the /dev/fuse fd is served on the
# JS thread (see src/fuse_ll.c for why, src/serve.c for how).
{
  "targets": [
    {
      "target_name": "strata_fuse",
      "sources": ["src/serve.c", "src/fuse_ll.c", "src/replies.c", "src/attrs.c", "src/write_behind.c", "src/slots.c", "src/read_maps.c", "src/names.c", "src/xattrs.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags": ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "<!@(pkg-config --cflags fuse3)"],
      "libraries": ["<!@(pkg-config --libs fuse3)", "-lm"],
    }
  ]
}
