//! `/ws/room/{name}`'s broadcast rooms: at most [`MAX_ROOMS`] rooms of up to
//! [`MAX_MEMBERS`] members, each member with a queue of [`MEMBER_QUEUE`] messages (a
//! member that does not keep up loses the overflow instead of growing memory).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// Most rooms at once.
pub(crate) const MAX_ROOMS: usize = 1024;
/// Most members of one room.
pub(crate) const MAX_MEMBERS: usize = 4096;
/// Messages queued for one room member before the overflow is dropped.
pub(crate) const MEMBER_QUEUE: usize = 256;

/// The broadcast rooms.
#[derive(Default)]
pub(crate) struct Rooms {
    rooms: Mutex<HashMap<String, Room>>,
}

#[derive(Default)]
struct Room {
    next: u64,
    members: Vec<(u64, mpsc::Sender<Message>)>,
}

impl Rooms {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Room>> {
        self.rooms.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins `name`: the member's id, its queue, and the member count; `None` when full.
    pub(crate) fn join(&self, name: &str) -> Option<(u64, mpsc::Receiver<Message>, usize)> {
        let mut rooms = self.lock();
        if !rooms.contains_key(name) && rooms.len() >= MAX_ROOMS {
            return None;
        }
        let room = rooms.entry(name.to_string()).or_default();
        if room.members.len() >= MAX_MEMBERS {
            return None;
        }
        let (tx, rx) = mpsc::channel(MEMBER_QUEUE);
        room.next += 1;
        room.members.push((room.next, tx));
        Some((room.next, rx, room.members.len()))
    }

    pub(crate) fn leave(&self, name: &str, id: u64) {
        let mut rooms = self.lock();
        if let Some(room) = rooms.get_mut(name) {
            room.members.retain(|(m, _)| *m != id);
            if room.members.is_empty() {
                rooms.remove(name);
            }
        }
    }

    pub(crate) fn broadcast(&self, name: &str, message: &Message) {
        let rooms = self.lock();
        if let Some(room) = rooms.get(name) {
            for (_, tx) in &room.members {
                // A full queue: that member is not keeping up; it loses this message.
                let _ = tx.try_send(message.clone());
            }
        }
    }

    /// Members of `name` now.
    #[cfg(test)]
    pub(crate) fn members(&self, name: &str) -> usize {
        self.lock().get(name).map_or(0, |r| r.members.len())
    }
}
