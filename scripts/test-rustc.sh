#!/usr/bin/env bash
# The compiler of the workspace's own crates in the test command's build, set as
# RUSTC_WORKSPACE_WRAPPER by scripts/test.sh (`linted`); cargo calls it as
# `test-rustc.sh RUSTC ARGS...`. It runs clippy-driver (rustc plus the lints, as
# `cargo clippy` does: $HEADROOM_CLIPPY_DRIVER) on the same arguments, except that a
# test harness (`--test`: a crate's unit tests, or the integration test binary) is
# compiled at opt-level 0 whatever the profile says (but one, at 2, below).
#
# Why: a harness is a second copy of its crate's code (with the tests), compiled only
# to run the tests, and optimising it is most of its build: headroom-scenario's unit
# tests take 78 s to compile at opt-level 3, 59 s at 1 and 13 s at 0, and the harnesses
# were 870 s of the 1,325 s the workspace's crates took to build with their tests.
# The libraries and binaries the tests drive (the `headroom` binary every integration
# test runs, the built-in target, the engine) keep the profile's levels: a load test
# measures them, and users build them the same way. The lints do not depend on the
# level (clippy reads MIR before LLVM optimises anything).
set -euo pipefail

driver=${HEADROOM_CLIPPY_DRIVER:?"scripts/test-rustc.sh: HEADROOM_CLIPPY_DRIVER is not set (scripts/test.sh sets it)"}
args=("$@")
harness=""
level=0
for i in "${!args[@]}"; do
    case "${args[$i]}" in
    --test) harness=1 ;;
    # Except the converters' unit tests: they bound how long a hostile document of tens
    # of megabytes takes to convert or refuse (a guard against quadratic work, with a
    # margin of about ten), and unoptimised they took 46 s instead of 12, most of that
    # margin. They get opt-level 2, not their crate's 1: at 0 and 1 rustc shares
    # generic code with the crates upstream, and their upstream includes the scenario
    # compiler (to load what they write), which `release` builds at 0, so at 1 they
    # ran on its unoptimised copies of serde's and the YAML parser's generics and took
    # 25 s. At 2 they compile their own.
    --crate-name) [ "${args[i + 1]:-}" = "headroom_convert" ] && level=2 ;;
    esac
done
if [ -n "$harness" ]; then
    # Cargo passes the level as `-C opt-level=N`, two arguments.
    for i in "${!args[@]}"; do
        case "${args[$i]}" in
        opt-level=*) args[i]=opt-level=$level ;;
        esac
    done
fi
exec "$driver" "${args[@]}"
