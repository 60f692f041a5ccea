//! `headroom report --rounds RUN...`: resolves the runs (ids, `latest~N`,
//! `label:round=3`), builds the [`Rounds`] page and writes it as Markdown or HTML.

use crate::report::rounds::Rounds;
use crate::store::RunRef;

use super::error::CommandError;
use super::exit::ExitCode;
use super::report::{write_or_print, ReportArgs, ReportFormat};

/// Runs `headroom report --rounds`: writes the rounds page.
pub fn run(args: &ReportArgs) -> Result<ExitCode, CommandError> {
    let refs = std::iter::once(&args.run)
        .chain(&args.more)
        .map(|r| r.parse())
        .collect::<Result<Vec<RunRef>, _>>()
        .map_err(CommandError::Reference)?;
    if !matches!(args.format, ReportFormat::Md | ReportFormat::Html) {
        return Err(CommandError::RoundsFormat);
    }
    let rounds = Rounds::build(&super::runs::open(args.store.as_deref())?, &refs)?;
    let text = match args.format {
        ReportFormat::Html => rounds.html(),
        _ => rounds.markdown(),
    };
    write_or_print(args.output.as_deref(), &text)?;
    Ok(ExitCode::OK)
}
