//! The seconds a run has completed, kept on disk rather than in memory: each merged
//! second holds a latency histogram (kilobytes), and an hour of them held in memory
//! was 40 MB of the generator's memory growing with time. Each second is appended to
//! an unnamed temporary file as it completes and read back once, when the run ends.
//!
//! A file that cannot be made or written (no temporary directory, a full disk) costs
//! memory, never a second: from the first failure on, seconds stay in memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};

use headroom_metrics::recorder::SecondBucket;

/// The completed seconds of a run, in the order they came.
pub(crate) struct Seconds {
    file: Option<File>,
    /// A write failed: no more are tried.
    full: bool,
    /// How many complete lines the file holds (a failed write may leave part of one
    /// after them).
    spilled: usize,
    memory: Vec<SecondBucket>,
    covered: u64,
    cpu_us: u64,
}

impl Seconds {
    /// No seconds yet; a temporary file to spill them to, when one can be made.
    pub(crate) fn new() -> Seconds {
        Seconds {
            file: tempfile::tempfile().ok(),
            full: false,
            spilled: 0,
            memory: Vec::new(),
            covered: 0,
            cpu_us: 0,
        }
    }

    /// Keeps one completed second.
    pub(crate) fn push(&mut self, bucket: SecondBucket) {
        self.covered = self.covered.max(bucket.t + 1);
        self.cpu_us += bucket.cpu_us;
        if let Some(file) = self.file.as_mut().filter(|_| !self.full) {
            // One line per second, written whole with one call.
            let mut line = serde_json::to_vec(&bucket).expect("a second always serializes");
            line.push(b'\n');
            if file.write_all(&line).is_ok() {
                self.spilled += 1;
                return;
            }
            // The lines before stay readable; this one may be cut, and is kept here.
            self.full = true;
        }
        self.memory.push(bucket);
    }

    /// Seconds from the start through the last one kept (`t + 1` of the latest).
    pub(crate) fn covered(&self) -> u64 {
        self.covered
    }

    /// CPU the engine threads used over the seconds kept, microseconds.
    pub(crate) fn cpu_us(&self) -> u64 {
        self.cpu_us
    }

    /// Every second kept, in the order they came. A spill file that cannot be read
    /// back (it was written by this process a moment ago) is a broken machine.
    pub(crate) fn into_vec(self) -> Vec<SecondBucket> {
        let mut out = Vec::with_capacity(self.spilled + self.memory.len());
        if let Some(mut file) = self.file.filter(|_| self.spilled > 0) {
            file.seek(SeekFrom::Start(0))
                .expect("rewind the spill file");
            for line in BufReader::new(file).lines().take(self.spilled) {
                let line = line.expect("read the spill file back");
                out.push(serde_json::from_str(&line).expect("a spilled second reads back"));
            }
        }
        out.extend(self.memory);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(t: u64, n: u64) -> SecondBucket {
        let mut b = SecondBucket::new(t);
        for i in 0..n {
            b.latency.record(100 + i * 7).unwrap();
        }
        b.cpu_us = 10;
        b
    }

    #[test]
    fn seconds_come_back_whole_and_in_order() {
        let mut seconds = Seconds::new();
        assert!(seconds.file.is_some(), "a temporary file here");
        for t in 0..50 {
            seconds.push(bucket(t, t + 1));
        }
        assert_eq!((seconds.covered(), seconds.cpu_us()), (50, 500));
        let back = seconds.into_vec();
        assert_eq!(back.len(), 50);
        for (t, b) in back.iter().enumerate() {
            assert_eq!(b.t, t as u64);
            assert_eq!(b.latency, bucket(t as u64, t as u64 + 1).latency);
        }
    }

    #[test]
    fn a_file_that_refuses_writes_keeps_them_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spill");
        File::create(&path).unwrap();
        let mut seconds = Seconds::new();
        // A file that refuses writes, as a full disk does.
        seconds.file = Some(File::open(&path).unwrap());
        for t in 0..3 {
            seconds.push(bucket(t, 3));
        }
        assert!(seconds.full);
        let back: Vec<u64> = seconds.into_vec().iter().map(|b| b.t).collect();
        assert_eq!(back, [0, 1, 2]);
    }
}
