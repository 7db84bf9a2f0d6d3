//! A client socket served through this worker's ring, as a tokio byte stream: the connection
//! code runs on it unchanged. Reads take what the multishot receive already delivered; writes
//! copy into the connection's send buffer and are sent when the worker next submits.

use super::ring::with_ring;
use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct UringStream {
    slot: usize,
}

fn no_ring() -> io::Error {
    io::Error::other("io_uring stream used off its worker thread")
}

impl UringStream {
    /// Serve `socket` through this thread's ring (None on a thread without one).
    pub fn new(socket: OwnedFd) -> Option<UringStream> {
        // The ring waits for it; a blocking socket never makes the kernel answer EAGAIN.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
        with_ring(|r| UringStream {
            slot: r.open(socket).0,
        })
    }
}

impl AsyncRead for UringStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        with_ring(|r| r.poll_read(self.slot, cx, buf))
            .unwrap_or_else(|| Poll::Ready(Err(no_ring())))
    }
}

impl AsyncWrite for UringStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        with_ring(|r| r.poll_write(self.slot, cx, buf))
            .unwrap_or_else(|| Poll::Ready(Err(no_ring())))
    }

    /// Written bytes are the kernel's to send (as with a TCP stream, whose flush is a no-op).
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        with_ring(|r| r.poll_shutdown(self.slot, cx)).unwrap_or_else(|| Poll::Ready(Err(no_ring())))
    }
}

impl Drop for UringStream {
    fn drop(&mut self) {
        with_ring(|r| r.close(self.slot));
    }
}
