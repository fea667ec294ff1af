//! The cap on live progress streams: how many may be open per principal and in all, and the count of
//! those open (a stream holds a [`StreamSlot`] and gives it back when it ends, however it ends).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many live event streams may be open at once: per principal (a user, a share link's holders, the
/// anonymous) and in all.
pub const STREAMS_PER_PRINCIPAL: usize = 8;
pub const STREAMS_TOTAL: usize = 256;
/// The open event streams, per principal.
#[derive(Debug, Default)]
pub struct Streams {
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream's place; given back when the stream ends (however it ends).
#[derive(Debug)]
pub struct StreamSlot {
    streams: Arc<Streams>,
    who: String,
}

impl Streams {
    /// A place for one more stream of `who`, or why not.
    pub fn open(self: &Arc<Self>, who: String) -> Result<StreamSlot, String> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let total: usize = open.values().sum();
        let mine = open.get(&who).copied().unwrap_or(0);
        if total >= STREAMS_TOTAL {
            return Err(format!("{STREAMS_TOTAL} live progress streams are open on this server; try again in a moment"));
        }
        if mine >= STREAMS_PER_PRINCIPAL {
            return Err(format!("you have {STREAMS_PER_PRINCIPAL} live progress streams open; close a page first"));
        }
        *open.entry(who.clone()).or_insert(0) += 1;
        Ok(StreamSlot { streams: self.clone(), who })
    }

    /// How many streams are open, in all.
    pub fn total(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).values().sum()
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.who);
            }
        }
    }
}
