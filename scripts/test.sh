#!/usr/bin/env bash
# The test command: installs what the tests need when it is missing, then builds the
# guide (docs/, mdbook), checks formatting, makes one release build of every crate
# with its tests (linted by clippy as it compiles), and runs the whole test suite of
# the workspace. Stops at the first failure.
#
#   bash scripts/test.sh
#
# Environment:
#   RUST_TEST_THREADS  tests run at once (default 1: load tests share the machine's
#                      cores, and two at a time would measure each other); the
#                      integration modules in PAIRED below run PAIRED_THREADS at once
#   PAIRED_THREADS     (default 6; 1 runs every test alone)
#   CARGO_TARGET_DIR   honoured as usual
#
# Works as root without a terminal (CI); as another user it needs sudo to install,
# and the tests that mount a tmpfs or make network namespaces fail (they need root).
set -euo pipefail

cd "$(dirname "$0")/.."

# ---------------------------------------------------------------------------- output
step() { printf '\n==> %s\n' "$*"; }
die() {
    printf '\nscripts/test.sh: FAILED: %s\n' "$*" >&2
    exit 1
}

# Runs a named step; on failure says which one and exits with its status.
run_step() {
    local name=$1
    shift
    step "$name"
    local status=0
    "$@" || status=$?
    if [ "$status" -ne 0 ]; then
        printf '\nscripts/test.sh: FAILED at step "%s" (exit %d): %s\n' \
            "$name" "$status" "$*" >&2
        exit "$status"
    fi
}

# ----------------------------------------------------------------- system packages
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -n "$@" || die "cannot run as root: $* (run this script as root, or set up sudo)"
    else
        die "need root to run: $* (run this script as root)"
    fi
}

have_nginx() { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }
have_postgres() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }
have_time() { [ -x /usr/bin/time ]; }
have_chromium() { [ -x /usr/bin/chromium ]; }
# `ip` (netns, veth, bridge) for the Kubernetes tests' node agent.
have_ip() { command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ]; }
# `openssl req -x509` makes the self-signed certificates of the --cacert pinning tests.
have_openssl() { command -v openssl >/dev/null 2>&1; }
# HTTP/3 servers nobody here wrote (tests/http3.rs): Caddy (h3 on by default since 2.6)
# and ngtcp2's gtlsserver (ngtcp2 + nghttp3 over GnuTLS).
have_caddy() { [ -x /usr/bin/caddy ]; }
have_gtlsserver() { [ -x /usr/sbin/gtlsserver ] || [ -x /usr/bin/gtlsserver ]; }

install_system_packages() {
    local missing=()
    have_nginx || missing+=(nginx)
    have_postgres || missing+=(postgresql)
    have_time || missing+=(time)
    have_chromium || missing+=(chromium)
    have_ip || missing+=(iproute2)
    have_openssl || missing+=(openssl)
    have_caddy || missing+=(caddy)
    have_gtlsserver || missing+=(ngtcp2-server)
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "nginx, PostgreSQL server, /usr/bin/time, chromium, iproute2, openssl, caddy and gtlsserver are present"
        return 0
    fi
    echo "installing: ${missing[*]}"
    command -v apt-get >/dev/null 2>&1 ||
        die "missing ${missing[*]} and no apt-get to install them; install them by hand"
    # Tests run their own nginx and PostgreSQL on free loopback ports; keep the
    # packages' post-install scripts from starting system-wide daemons.
    local policy=/usr/sbin/policy-rc.d added_policy=""
    if [ ! -e "$policy" ]; then
        as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
        added_policy=1
    fi
    local status=0
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q || status=$?
    if [ "$status" -eq 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
    fi
    if [ -n "$added_policy" ]; then as_root rm -f "$policy"; fi
    [ "$status" -eq 0 ] || die "apt-get could not install ${missing[*]} (exit $status)"
    have_nginx || die "nginx still missing after install"
    have_postgres || die "PostgreSQL server binaries still missing after install"
    have_time || die "/usr/bin/time still missing after install"
    have_chromium || die "chromium (for the HTML report test) still missing after install"
    have_ip || die "ip (iproute2, for the Kubernetes tests) still missing after install"
    have_openssl || die "openssl (for the self-signed certificate tests) still missing after install"
}

# ------------------------------------------------------------------ Rust toolchain
ensure_rust() {
    if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    command -v cargo >/dev/null 2>&1 || die "cargo not found; install Rust (rustup) first"
    local components=()
    cargo fmt --version >/dev/null 2>&1 || components+=(rustfmt)
    cargo clippy --version >/dev/null 2>&1 || components+=(clippy)
    if [ "${#components[@]}" -gt 0 ]; then
        command -v rustup >/dev/null 2>&1 ||
            die "missing ${components[*]} and no rustup to add them"
        rustup component add "${components[@]}" ||
            die "rustup could not add ${components[*]}"
    fi
    cargo --version
}

# --------------------------------------------------------------------------- guide
# The guide (docs/, an mdBook) with a pinned mdbook, built once per machine and kept
# outside the clone, as the peer servers are. Only the `search` feature: the build
# needs no `serve` or `watch`, and they would double the install's compile time.
MDBOOK_VERSION=0.5.4
TOOLS_DIR="$HOME/.cache/headroom/tools"

build_guide() {
    local mdbook="$TOOLS_DIR/bin/mdbook"
    if ! "$mdbook" --version 2>/dev/null | grep -qx "mdbook v$MDBOOK_VERSION"; then
        echo "installing mdbook $MDBOOK_VERSION into $TOOLS_DIR"
        # Unoptimised: the guide is some fifty pages, which mdbook renders in well
        # under a second either way, while optimising its ~200 crates is most of the
        # install's minutes of compiling.
        CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 \
            cargo install mdbook --version "$MDBOOK_VERSION" --locked \
            --no-default-features --features search --root "$TOOLS_DIR" || return
    fi
    # Into docs/book/ (ignored by docs/.gitignore). A warning fails the step as an
    # error does: the book must build cleanly.
    local log status=0
    log=$("$mdbook" build docs 2>&1) || status=$?
    printf '%s\n' "$log"
    [ "$status" -eq 0 ] || return "$status"
    if grep -Eq '(^|[[:space:]])(WARN|ERROR)[[:space:]]' <<<"$log"; then
        echo "mdbook build docs warned; the guide must build without warnings" >&2
        return 1
    fi
}

# ------------------------------------------------------------------ lint and build
# One build of every crate, its unit tests, examples and integration tests, in the
# profile the tests run in (release: optimised, no LTO; see Cargo.toml), with the
# workspace's own crates compiled by clippy-driver (clippy's compiler: rustc and the
# lints), as `cargo clippy` runs it, and every warning denied. So the build is the lint:
# a separate `cargo clippy` would check every dependency's front end once more, for no
# other finding. The lints are those of
# `cargo clippy --release --workspace --all-targets -- -D warnings` (`cargo test`
# builds the same targets but the benches, and there are none). clippy-driver turns
# MIR optimisations off (its MIR lints read unoptimised MIR); LLVM still optimises at
# the profile's level, and the benchmarks build `dist` with plain rustc.
#
# CLIPPY_ARGS is how `cargo clippy` hands its `-- ARGS` to clippy-driver (each followed
# by `__CLIPPY_HACKERY__`). Should a later clippy read its arguments another way, the
# lints would only warn: any warning the build prints fails the step as well.
#
# Cargo keeps the wrapper in a workspace crate's fingerprint, so the tests run with the
# same environment (or they would compile the workspace's crates again), and a later
# plain `cargo build --release` recompiles the workspace's crates (not the
# dependencies).
linted() {
    local driver
    driver="$(rustc --print sysroot)/bin/clippy-driver"
    if [ ! -x "$driver" ]; then
        echo "clippy-driver not found at $driver (rustup component add clippy)" >&2
        return 1
    fi
    # Through scripts/test-rustc.sh, which hands clippy-driver every crate but
    # compiles test harnesses unoptimised (why: in that file).
    RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/test-rustc.sh" HEADROOM_CLIPPY_DRIVER="$driver" \
        CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" "$@"
}

lint_and_build() {
    local log status=0
    log=$(mktemp "${TMPDIR:-/tmp}/headroom-build.XXXXXX")
    linted cargo test --release --workspace --no-run 2>&1 | tee "$log" || status=$?
    if [ "$status" -eq 0 ] && grep -q '^warning' "$log"; then
        echo "the build printed warnings; the lint denies every one" >&2
        status=1
    fi
    rm -f "$log"
    return "$status"
}

# Integration test modules (tests/tests.rs), submodules (`http3::mtls`) or single tests
# (`run_tls::run_resolve_sends_a_name_to_an_address`) that run PAIRED_THREADS (6) at a
# time, each paired with other tests of this list and no others. An entry is here when
# none of its tests runs a search (which measures the machine) and none asserts
# anything a busy neighbour could move: no latency, rate, count or elapsed time that
# depends on how fast the machine answers, unless its bound is loose by tens of times
# what it measures (a loopback call under 100 ms, a run ended within 2 s of slack),
# none reads a shared store's `latest`, and none reaches what another test owns (a
# /proc scan for any shard, a fixed name). A count set by the schedule and drained at
# the end (20 requests at 20/s) holds at any speed; a rate measured over wall time
# does not. Such a test may load the machine: its neighbours are others of these,
# which only take longer. The rest, the searches and every timing test among them, run
# one at a time afterwards.
# Six, not two: these tests wait (servers starting, runs of a second or two,
# timeouts) far more than they compute, so the group (then 116 tests) took 92 s two at
# a time and 51 s four at a time, 56 s four at a time on a single core (taskset -c 1),
# and 54 s beside two busy loops on both cores: the waiting overlaps, the work queues.
# With 186 tests: 88 s four at a time, 64 s six, 54 s eight; six at a time on a single
# core took 81 s and passed, and eight on one core did not (a login journey made 95
# page views where its test wants 96), so six leaves that one core of margin.
# (run_tls's resumption test stays out: a resumed session depends on a ticket arriving
# within 50 ms.)
PAIRED=(
    check_cli connections convert_cli convert_fronts docs_examples graphql graphql_peer
    grpc_client grpc_steps hostile http2_client iterations journey_peers journeys
    journeys_login quick_flags report_cli run_tls_pinned schema secrets store_cli
    stream_connections support target_tls har_browser shards_channel shares
    # A shard named silent within 8 s of slack after the coordinator's 10 s timeout,
    # the other shard's figures counts (17 s, nearly all of it that timeout).
    shards_stall
    # Submodules of modules that have a timing test elsewhere in them:
    http3::mtls watch_cli::postgres watch_cli::prometheus_tls
    # Single tests of such modules: bad input refused before any load, counts fixed by
    # the schedule and drained, error kinds, and bounds tens of times what they measure.
    kube::cluster_manifest_refuses_bad_input_naming_the_flag
    shards_cli::a_connection_without_the_runs_secret_cannot_join
    shards_cli::bad_shard_flags_are_bad_input_before_any_load
    shards_cli::a_scenarios_cluster_block_shards_the_run
    shards_cli::shards_started_elsewhere_join_a_coordinator_that_waits_for_them
    workloads::a_failing_workload_rule_fails_the_run
    workloads::every_workload_is_split_over_shards
    run_errors::a_connection_closed_mid_response_is_a_reset
    run_errors::a_malformed_response_is_a_protocol_error
    run_errors::unexpected_statuses_and_failed_checks_are_counted_by_kind
    delivery::lost_deliveries_are_counted_exactly_and_fail_the_threshold
    delivery::a_sink_scenario_with_bad_fields_is_bad_input
    delivery::headroom_sink_alone_answers_and_reports
    delivery::sink_variables_without_a_sink_are_bad_input
    ws_steps::an_oversized_message_fails_the_stream_without_being_buffered
    ws_steps::an_arrivals_streams_close_when_its_iteration_ends
    ws_steps::a_flow_that_only_holds_a_stream_waits_on_it_instead_of_spinning
    sse::a_refused_stream_is_a_stream_error_and_the_run_adds_up
    http2::h2c_with_prior_knowledge_and_h2_by_alpn_both_carry_the_load
    http2::a_server_that_does_not_agree_to_h2_is_a_clear_tls_error_not_a_fallback
    http2::goaway_after_the_servers_request_limit_opens_a_new_connection_without_errors
    http2::per_request_h2_over_tls_handshakes_once_per_request
    http2::seed_002s_experiment_against_the_built_in_targets_h2c
    http2::h2_by_alpn_against_the_built_in_targets_tls
    otlp::an_otlp_url_that_is_not_http_is_bad_input_before_any_load
    run_tls::run_https_with_cacert_succeeds_and_without_it_fails_as_tls
    run_tls::run_https_requires_the_client_certificate_nginx_asks_for
    run_tls::run_resolve_sends_a_name_to_an_address
    run_tls::run_https_against_a_tls12_only_server
    run_tls::run_https_reads_the_scenario_client_block
    run_tls::run_bad_tls_files_are_bad_input_naming_the_file
    run_tls::run_https_handshake_cut_short_or_never_answered
    convert_k6::a_k6_script_with_a_login_in_setup_runs_as_it_is
    convert_k6::the_report_names_what_was_left_out_and_strict_refuses_it
    convert_k6::each_user_logs_in_with_its_own_csv_row
    convert_k6::two_k6_scenarios_become_two_workloads
    watch_cli::a_watch_that_cannot_start_is_bad_input_naming_it_before_any_load
    watch_cli::process::an_nginx_worker_shows_cpu_under_load_and_the_generator_comes_first
    watch_cli::process::fds_near_a_low_ulimit_raise_a_warning
    http3::each_connection_model_over_quic_against_the_built_in_target
    http3::bad_setups_are_named_and_every_request_is_accounted_for
    http3::caddy_over_h3_and_h2_side_by_side
    http3::hostile_h3_servers_are_classified_bounded_and_accounted_for
    http3::compare_protocols_runs_each_cold_and_warm_into_one_table
    run_cli::weights_70_15_15_land_within_3_points
    run_cli::flows_pass_captured_ids_to_later_steps
    run_cli::a_failed_threshold_exits_99_and_says_so
    run_cli::a_broken_scenario_exits_2_naming_file_line_and_field
    run_cli::an_impossible_rate_on_one_thread_is_flagged_generator_bound
    run_cli::an_unreachable_target_counts_connect_errors_and_says_so
    thresholds_window::a_bad_window_is_refused_at_load_time
    run_faults::a_store_that_cannot_be_written_is_bad_input_before_any_load_is_sent
    dashboard::token::without_its_token_the_dashboard_serves_nothing_and_cannot_stop_the_run
    # Searches whose every assertion holds whatever the search measured: a hook that
    # fails ends the search after its first step; bad flags exit before any load.
    find_cli::a_failing_hook_stops_the_search_and_keeps_the_steps_done
    find_cli::hold::a_bad_hold_is_refused_before_any_load
    find_cli::trials::as_many_allowed_failures_as_trials_is_refused
)

# Modules whose tests (those not in PAIRED) start a Kubernetes cluster: they run alone,
# last, once the control plane's background build is done (wait_kube, below).
NEEDS_KUBE=(kube kube_run)

# Every test of the workspace: the crates' own tests and the doc tests one at a time,
# then the integration tests in three groups (PAIRED above, then the rest but those
# of NEEDS_KUBE, then those).
# (Called by run_step, where `set -e` does not reach: every command says `|| return`.)
run_tests() {
    linted cargo test --release --workspace --lib --bins || return
    linted cargo test --release --workspace --doc || return
    local listing names=() paired=() alone=() last=()
    listing=$(linted cargo test --release --test tests -- --list --format terse) || return
    mapfile -t names < <(sed -n 's/: test$//p' <<<"$listing")
    # Each test goes to the first PAIRED entry that names it or a module above it, or
    # alone; an entry that took no test names none, a typo or a rename, and fails the
    # step.
    local name entry
    local -A took=()
    for name in "${names[@]}"; do
        for entry in "${PAIRED[@]}"; do
            if [[ "$name" == "$entry" || "$name" == "$entry::"* ]]; then
                paired+=("$name")
                took[$entry]=1
                continue 2
            fi
        done
        for entry in "${NEEDS_KUBE[@]}"; do
            if [[ "$name" == "$entry::"* ]]; then
                last+=("$name")
                continue 2
            fi
        done
        alone+=("$name")
    done
    for entry in "${PAIRED[@]}"; do
        if [ -z "${took[$entry]:-}" ]; then
            echo "scripts/test.sh: PAIRED names $entry, which has no tests in tests/" >&2
            return 1
        fi
    done
    echo "integration tests: ${#paired[@]} ${PAIRED_THREADS:-6} at a time, then ${#alone[@]}" \
        "one at a time, then ${#last[@]} with a Kubernetes cluster"
    linted cargo test --release --test tests -- --exact \
        --test-threads "${PAIRED_THREADS:-6}" "${paired[@]}" || return
    linted cargo test --release --test tests -- --exact --test-threads 1 "${alone[@]}" || return
    wait_kube || return
    linted cargo test --release --test tests -- --exact --test-threads 1 "${last[@]}"
}

# -------------------------------------------------------------------------- main
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-1}"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"
# peers.sh builds the Kubernetes control plane, so its tests must run, never skip.
export HEADROOM_REQUIRE_KUBE="${HEADROOM_REQUIRE_KUBE:-1}"
# Likewise every other prerequisite a test skips without when run by hand (tests'
# support::require): a PostgreSQL server (installed above), root to mount a tmpfs and
# to make bridges and network namespaces (as the Kubernetes tests need anyway). Here a
# missing one fails the test that needs it rather than letting it pass unrun. Only
# features of the machine no package installs (cgroup v2 mounted) still skip, loudly.
export HEADROOM_REQUIRE_ALL="${HEADROOM_REQUIRE_ALL:-1}"

# The peer servers (scripts/peers.sh) build in the background while the guide and the
# linted Rust build run: on a fresh machine both are minutes of compiling, and each has
# stretches (downloads, links, a crate waiting for the one before it) where the other
# fills the cores. The tests step waits for them first, all but the Kubernetes control
# plane.
#
# That one (peer_kube) is about 800 s of the peers' 1,040 s of CPU from an empty Go
# cache, and only five tests start a cluster. So it builds after the others, at idle
# priority (SCHED_IDLE: it runs only when no other process wants a core), through the
# Rust build and the tests, and those five run last, once it is done. Why idle and not
# beside the Rust build as before: two cores shared by both builds finish both at the
# end of their sum, about 2,500 s of CPU; the tests, which wait far more than they
# compute, leave most of a core idle for 15 minutes, and the control plane fills it.
# The tests already pass beside a CPU hog on the other core (issue 28), and an idle
# process yields the core at once to any that wakes. If it is not done when the other
# tests are, its priority goes back to normal and the last five wait for it.
PEERS_LOG=$(mktemp "${TMPDIR:-/tmp}/headroom-peers.XXXXXX")
KUBE_LOG=$(mktemp "${TMPDIR:-/tmp}/headroom-peers-kube.XXXXXX")
# The first stage's exit status, written when it ends (the background job goes on).
PEERS_STATUS=$(mktemp -u "${TMPDIR:-/tmp}/headroom-peers-status.XXXXXX")
peers_pid=""
# At idle priority: SCHED_IDLE where chrt (util-linux) can set it, else the lowest
# nice level.
idle() {
    if chrt --idle 0 true 2>/dev/null; then
        chrt --idle 0 "$@"
    else
        nice -n 19 "$@"
    fi
}
start_peers() {
    (
        status=0
        bash scripts/peers.sh --except kube >"$PEERS_LOG" 2>&1 || status=$?
        echo "$status" >"$PEERS_STATUS"
        [ "$status" -eq 0 ] || exit "$status"
        idle bash scripts/peers.sh kube >"$KUBE_LOG" 2>&1
    ) &
    peers_pid=$!
    echo "building in the background (pid $peers_pid, logs $PEERS_LOG and $KUBE_LOG)"
}
# Waits for every peer but the Kubernetes control plane (which goes on building).
wait_peers() {
    local status
    while [ ! -s "$PEERS_STATUS" ] && kill -0 "$peers_pid" 2>/dev/null; do sleep 1; done
    status=$(cat "$PEERS_STATUS" 2>/dev/null || echo 1)
    cat "$PEERS_LOG"
    rm -f "$PEERS_LOG" "$PEERS_STATUS"
    return "$status"
}
# Waits for the Kubernetes control plane, at normal priority from here on (the go
# command's later compiles inherit it).
wait_kube() {
    step "Kubernetes control plane (scripts/peers.sh kube), finished"
    on_tree to_normal_priority "$peers_pid"
    local status=0
    wait "$peers_pid" || status=$?
    peers_pid=""
    cat "$KUBE_LOG"
    rm -f "$KUBE_LOG"
    return "$status"
}
# Undoes either kind of idle() (a process that has already ended is no error).
to_normal_priority() {
    chrt --other --pid 0 "$1" 2>/dev/null || true
    renice -n 0 -p "$1" >/dev/null 2>&1 || true
}
# Runs FN on every process of the tree under PID, children first.
on_tree() {
    local fn=$1 child
    for child in $(pgrep -P "$2" 2>/dev/null); do on_tree "$fn" "$child"; done
    "$fn" "$2"
}
# A failed step elsewhere ends the script: the background build (and the go or pip it
# runs) must not outlive it.
end_process() { kill "$1" 2>/dev/null || true; }
trap 'if [ -n "$peers_pid" ]; then on_tree end_process "$peers_pid"; fi' EXIT

run_step "system packages (nginx, postgresql, time, chromium, iproute2, openssl, caddy, ngtcp2-server)" install_system_packages
run_step "Rust toolchain (rustfmt, clippy)" ensure_rust
run_step "peer servers (scripts/peers.sh), started" start_peers
run_step "guide (mdbook build)" build_guide
run_step "format" cargo fmt --all -- --check
run_step "lint and build (release, with the tests)" lint_and_build
run_step "peer servers (scripts/peers.sh --except kube), finished" wait_peers
run_step "tests (release, RUST_TEST_THREADS=$RUST_TEST_THREADS)" run_tests

printf '\nscripts/test.sh: all steps passed\n'
