//! `headroom report --rounds RUN...`: resolves the runs (ids, `latest~N`,
//! `label:round=3`), builds the [`Rounds`] page and writes it as Markdown or HTML.

use crate::cli::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};
use crate::report::rounds::Rounds;
use crate::store::RunRef;

use super::report::{ReportArgs, ReportFormat};

/// Runs `headroom report --rounds` and returns the exit code.
pub fn run(args: &ReportArgs) -> i32 {
    let refs: Result<Vec<RunRef>, _> = std::iter::once(&args.run)
        .chain(&args.more)
        .map(|r| r.parse())
        .collect();
    let refs = match refs {
        Ok(refs) => refs,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if !matches!(args.format, ReportFormat::Md | ReportFormat::Html) {
        eprintln!("error: --rounds writes --format md or html");
        return EXIT_BAD_INPUT;
    }
    let built = super::runs::open(args.store.as_deref())
        .and_then(|store| Rounds::build(&store, &refs).map_err(|e| e.to_string()));
    let rounds = match built {
        Ok(rounds) => rounds,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let text = match args.format {
        ReportFormat::Html => rounds.html(),
        _ => rounds.markdown(),
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return EXIT_FAILURE;
            }
        }
        None => print!("{text}"),
    }
    EXIT_OK
}
