//! Replies a client has not read yet (Redis's reply list). While they wait for the socket, the
//! connection goes on reading and running the client's requests, as Redis does: their replies
//! queue up behind, and the output-buffer limits and client eviction see the whole queue.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::{Context, Poll};
use tokio::io::AsyncWriteExt;

use crate::connection::ClientStream;

#[derive(Default)]
pub struct Outbox {
    /// Batches of replies, oldest first.
    chunks: VecDeque<Vec<u8>>,
    /// Bytes of the first chunk already written.
    head_sent: usize,
    /// Unwritten bytes in all.
    bytes: usize,
    /// A write went out since the last flush (TLS may keep records it could not send yet; on
    /// TCP a flush is free).
    unflushed: bool,
}

impl Outbox {
    /// Reply bytes waiting for the socket.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Nothing waits, not even a flush.
    pub fn is_idle(&self) -> bool {
        self.bytes == 0 && !self.unflushed
    }

    /// Queue `buf[sent..]` (the part of a batch the socket did not take at once).
    pub fn push(&mut self, buf: Vec<u8>, sent: usize) {
        if sent < buf.len() {
            self.bytes += buf.len() - sent;
            if self.chunks.is_empty() {
                self.head_sent = sent;
                self.chunks.push_back(buf);
            } else {
                // Behind other chunks nothing of it can have been written.
                debug_assert_eq!(sent, 0);
                self.chunks.push_back(buf);
            }
        }
    }

    /// A write just went out directly (around the queue, which was empty): flush it if the
    /// socket lets us now (always on TCP), else the flush waits with the queue.
    pub async fn wrote_directly<S: ClientStream>(&mut self, stream: &mut S) -> io::Result<()> {
        let flushed = std::future::poll_fn(|cx| Poll::Ready(pin!(stream.flush()).poll(cx))).await;
        match flushed {
            Poll::Ready(Ok(())) => self.unflushed = false,
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => self.unflushed = true,
        }
        Ok(())
    }

    /// Move the queue forward as far as the socket lets it without waiting. Ready(Ok(n)) once
    /// something happened (`n` bytes written, 0 for a finished flush); Pending when the
    /// socket takes nothing now (or nothing waits).
    pub fn poll_send<S: ClientStream>(
        &mut self,
        stream: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        if let Some(head) = self.chunks.front() {
            let rest = &head[self.head_sent..];
            let head_len = head.len();
            let written = pin!(stream.write(rest)).poll(cx);
            return match written {
                Poll::Ready(Ok(0)) => Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.unflushed = true;
                    self.bytes -= n;
                    self.head_sent += n;
                    if self.head_sent == head_len {
                        self.chunks.pop_front();
                        self.head_sent = 0;
                    }
                    Poll::Ready(Ok(n))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            };
        }
        if self.unflushed {
            let flushed = pin!(stream.flush()).poll(cx);
            return match flushed {
                Poll::Ready(Ok(())) => {
                    self.unflushed = false;
                    Poll::Ready(Ok(0))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            };
        }
        Poll::Pending
    }

    /// Write everything queued, waiting as long as it takes; `progress` is told the bytes
    /// still waiting after each write (CLIENT LIST's obl/omem, client eviction).
    pub async fn drain<S: ClientStream>(
        &mut self,
        stream: &mut S,
        mut progress: impl FnMut(usize),
    ) -> io::Result<()> {
        while !self.is_idle() {
            std::future::poll_fn(|cx| self.poll_send(stream, cx)).await?;
            progress(self.bytes);
        }
        Ok(())
    }
}

/// Try `stream.write(buf)` once, without waiting: Ok(0) when the socket takes nothing now.
pub async fn write_now<S: ClientStream>(stream: &mut S, buf: &[u8]) -> io::Result<usize> {
    std::future::poll_fn(|cx| match pin!(stream.write(buf)).poll(cx) {
        Poll::Ready(Ok(0)) if !buf.is_empty() => Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
        Poll::Ready(r) => Poll::Ready(r),
        Poll::Pending => Poll::Ready(Ok(0)),
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn queued_chunks_go_out_in_order() {
        let (mut a, mut b) = tokio::io::duplex(8);
        let mut o = Outbox::default();
        o.push(b"xxhello ".to_vec(), 2);
        o.push(b"world".to_vec(), 0);
        assert_eq!(o.bytes(), 11);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            b.read_to_end(&mut got).await.unwrap();
            got
        });
        let mut seen = Vec::new();
        o.drain(&mut a, |left| seen.push(left)).await.unwrap();
        assert!(o.is_idle());
        assert_eq!(seen.last(), Some(&0));
        assert!(seen.windows(2).all(|w| w[0] >= w[1]), "{seen:?}");
        drop(a);
        assert_eq!(reader.await.unwrap(), b"hello world");
    }

    #[tokio::test]
    async fn write_now_does_not_wait_for_a_full_pipe() {
        let (mut a, _b) = tokio::io::duplex(4);
        assert_eq!(write_now(&mut a, b"abcdef").await.unwrap(), 4);
        assert_eq!(write_now(&mut a, b"gh").await.unwrap(), 0);
    }
}
