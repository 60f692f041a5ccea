//! The `headroom` binary: parse the command line, run, map the outcome to an exit code.

fn main() {
    std::process::exit(headroom::cli::main());
}
