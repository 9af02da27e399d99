//! Server-sent events from a task: the handler spawns the generation loop, which sends each
//! `data:` payload into a bounded channel that the response body streams; a client that
//! disconnects drops the body, the task sees the channel closed and ends its generation.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::mpsc;

/// The sending half given to the generation task.
pub type Tx = mpsc::Sender<String>;

/// A channel and the SSE response reading it.
pub fn channel() -> (Tx, Sse<impl Stream<Item = Result<Event, Infallible>>>) {
    let (tx, rx) = mpsc::channel::<String>(64);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|data| (Ok(Event::default().data(data)), rx))
    });
    (tx, Sse::new(stream).keep_alive(KeepAlive::default()))
}
