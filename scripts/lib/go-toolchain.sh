# Sourced by scripts that build Go modules: puts a Go toolchain on PATH.
# The machine's `go` when it is recent enough; otherwise the official toolchain of
# $CJOB_GO_VERSION from the Go module proxy (the module golang.org/toolchain, which is
# how the go command itself fetches a newer toolchain), unpacked once into
# ${CJOB_CACHE:-~/.cache/cjob}/go/<version>. Needs only Python to unpack.
CJOB_GO_VERSION=${CJOB_GO_VERSION:-1.26.8}

_go_recent_enough() {
    command -v go >/dev/null 2>&1 || return 1
    local have
    have=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
    [ "$(printf '%s\n%s\n' "1.26.0" "$have" | sort -V | head -1)" = "1.26.0" ]
}

ensure_go() {
    _go_recent_enough && return 0
    local dir=${CJOB_CACHE:-$HOME/.cache/cjob}/go/$CJOB_GO_VERSION
    if [ ! -x "$dir/bin/go" ]; then
        local arch
        case "$(uname -m)" in
            x86_64) arch=amd64 ;;
            aarch64 | arm64) arch=arm64 ;;
            *) echo "go-toolchain: no Go toolchain for $(uname -m)" >&2; return 1 ;;
        esac
        local proxy=${GOPROXY:-https://proxy.golang.org}
        proxy=${proxy%%,*}
        local url="$proxy/golang.org/toolchain/@v/v0.0.1-go$CJOB_GO_VERSION.linux-$arch.zip"
        echo "==> Go $CJOB_GO_VERSION from the Go module proxy ($url)" >&2
        mkdir -p "$dir.tmp"
        python3 - "$url" "$dir.tmp" <<'PY'
import io, os, sys, urllib.request, zipfile
url, dest = sys.argv[1], sys.argv[2]
data = urllib.request.urlopen(url, timeout=300).read()
prefix = "golang.org/toolchain@"
with zipfile.ZipFile(io.BytesIO(data)) as archive:
    for info in archive.infolist():
        name = info.filename.split("/", 2)[-1] if info.filename.startswith(prefix) else info.filename
        target = os.path.join(dest, name)
        if info.is_dir():
            os.makedirs(target, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with archive.open(info) as src, open(target, "wb") as out:
            out.write(src.read())
        mode = info.external_attr >> 16
        os.chmod(target, mode if mode else 0o644)
PY
        rm -rf "$dir" && mv "$dir.tmp" "$dir"
    fi
    export PATH="$dir/bin:$PATH"
    export GOTOOLCHAIN=local
}
