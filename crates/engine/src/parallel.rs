//! `parallel:` requests of one step, sent at once as k6's `http.batch` sends them:
//! over up to [`MAX_CONNECTIONS`] connections of the user at a time in HTTP/1.1 (the
//! first on the user's own, the others on connections opened beside it, as a browser
//! opens six per origin), and as concurrent streams of the user's connection in
//! HTTP/2. Each request is accounted and recorded on its own; the step ends when all
//! have, and fails when any did. Cookies any of them received join the user's jar.

use futures_util::future::join_all;

use crate::request::{send, Sent};
use crate::thread::Pending;
use crate::user::{Flowed, Intended, Run, Scratch};
use crate::work::Prepared;
use headroom_client::Protocol;

/// Most HTTP/1.1 requests of a `parallel:` step in flight at once (a browser's
/// connections per origin).
pub(crate) const MAX_CONNECTIONS: usize = 6;

/// Sends `requests` at once.
pub(crate) async fn run(run: &mut Run<'_>, requests: &[Prepared]) -> Flowed {
    let state = run.state;
    let wave = match state.client.protocol() {
        Protocol::Http2 | Protocol::Http3 => requests.len(),
        Protocol::Http1 => MAX_CONNECTIONS,
    };
    let mut outcome = Flowed::Ok;
    for chunk in requests.chunks(wave.max(1)) {
        let intended = run.intended;
        // The user's own session carries the first; the others get siblings of it.
        let mut sessions: Vec<_> = (1..chunk.len()).map(|_| run.session.sibling()).collect();
        let mut scratches: Vec<Scratch> = (0..chunk.len()).map(|_| run.scratch.beside()).collect();
        let pendings: Vec<Pending> = (0..chunk.len()).map(|_| run.pending()).collect();
        let (own, others) = scratches.split_first_mut().expect("a chunk is never empty");
        let mut sends = Vec::with_capacity(chunk.len());
        let first = pendings.into_iter();
        let mut first = first;
        sends.push(Box::pin(send(
            state,
            &chunk[0],
            first.next().expect("one per request"),
            run.session,
            intended,
            own,
        ))
            as std::pin::Pin<Box<dyn std::future::Future<Output = Sent> + '_>>);
        for ((prepared, session), scratch) in chunk[1..]
            .iter()
            .zip(sessions.iter_mut())
            .zip(others.iter_mut())
        {
            sends.push(Box::pin(send(
                state,
                prepared,
                first.next().expect("one per request"),
                session,
                intended,
                scratch,
            )));
        }
        let results = join_all(sends).await;
        for scratch in scratches {
            run.scratch.absorb(scratch);
        }
        run.intended = Intended::Now(std::time::Instant::now());
        for r in results {
            match r {
                Sent::Ok => {}
                Sent::Failed if outcome == Flowed::Ok => outcome = Flowed::Failed,
                Sent::ConnectFailed => outcome = Flowed::ConnectFailed,
                Sent::Failed => {}
            }
        }
        if outcome != Flowed::Ok {
            break;
        }
    }
    outcome
}
