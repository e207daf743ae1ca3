#!/usr/bin/env bash
# Build the Debian package target/debian/spinscope_<version>-1_<arch>.deb from the release
# build: the binary itself writes the man pages and the shell completions, then `cargo deb`
# packages the release binary stripped (no second build: `cargo test --release` already made it).
# Needs cargo-deb: cargo install cargo-deb --locked
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build --release --locked --bin spinscope
bin=target/release/spinscope
assets=target/deb-assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$bin" man --out-dir "$assets/man" 2>/dev/null
"$bin" completions bash > "$assets/completions/spinscope.bash"
"$bin" completions zsh > "$assets/completions/_spinscope"
"$bin" completions fish > "$assets/completions/spinscope.fish"
cargo deb --no-build --strip --locked "$@"
