//! A child process running a kernel under test (Unix): forked from the verifier, so it holds
//! the op, its kernels and the registry without any second declaration, and serves one request
//! (a case) at a time over a pipe. Its stdout and stderr go to a pipe the verifier keeps the
//! tail of; its address space and core dumps are limited; every wait has a deadline. How it
//! ends (a signal, an exit, an allocation that failed, a timeout) is read from `waitpid`.
//!
//! The child has only the forking thread; the CPU backend starts its pool again there
//! (`core::process`), and each request runs inside a pool of the child's own, so a kernel that
//! uses rayon directly finds live threads. A lock some other thread of the verifier held at the
//! fork stays held in the child: the call then hangs and times out, and conformance confirms
//! every timeout in a fresh child before it becomes a verdict.

use super::wire::{self, Reply};
use super::{Death, Serve};
use op_core::tensor::Tensor;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Bytes of the child's output kept for the verdict's message.
const TAIL: usize = 4096;
/// How often a long wait reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// A running child.
pub struct Child {
    pid: libc::pid_t,
    to_child: Option<OwnedFd>,
    from_child: OwnedFd,
    output: OwnedFd,
    /// The first bytes the child printed, and the last (see `drain_output`).
    head: Vec<u8>,
    tail: Vec<u8>,
}

fn errno(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno("pipe2"));
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A connected pair of stream sockets: the request channel, written with `MSG_NOSIGNAL` so a
/// dead child is an error, never a SIGPIPE in the verifier.
fn socket_pair() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(errno("socketpair"));
    }
    // SAFETY: socketpair succeeded, so both are open descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn nonblocking(fd: &OwnedFd) {
    // SAFETY: fcntl on an open descriptor; failure leaves it blocking, which the poll loop
    // tolerates (a read after POLLIN does not block).
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

impl Child {
    /// Forks a child serving requests with `serve`, allowed `memory` bytes of address space
    /// beyond what it inherits.
    pub fn spawn(serve: &Serve<'_>, memory: u64) -> Result<Child, String> {
        let (req_r, req_w) = socket_pair()?;
        let (resp_r, resp_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        // SAFETY: fork has no preconditions; the child only runs `child_main`, which never
        // returns, and the parent keeps its own ends.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(errno("fork"));
        }
        if pid == 0 {
            drop((req_w, resp_r, out_r));
            child_main(req_r, resp_w, out_w, serve, memory);
        }
        drop((req_r, resp_w, out_w));
        [&req_w, &resp_r, &out_r].into_iter().for_each(nonblocking);
        Ok(Child { pid, to_child: Some(req_w), from_child: resp_r, output: out_r, head: Vec::new(), tail: Vec::new() })
    }

    /// Sends one request and waits at most `limit` for its reply; `progress` is told how long
    /// the wait has lasted every few seconds.
    pub fn call(&mut self, body: Vec<u8>, limit: Duration, progress: &mut dyn FnMut(Duration)) -> Result<Reply, Death> {
        let start = Instant::now();
        let deadline = start + limit;
        let msg = wire::frame(body);
        match self.send(&msg, deadline, start, progress) {
            Ok(()) => {}
            Err(Wait::Closed) => return Err(self.death(None)),
            Err(Wait::Timeout) => return Err(self.death(Some(limit))),
        }
        let mut prefix = [0u8; 8];
        match self.receive(&mut prefix, deadline, start, progress) {
            Ok(()) => {}
            Err(Wait::Closed) => return Err(self.death(None)),
            Err(Wait::Timeout) => return Err(self.death(Some(limit))),
        }
        let len = wire::frame_len(prefix);
        let mut body = usize::try_from(len).ok().and_then(vec_of).ok_or(Death::Lost(format!("a reply of {len} bytes")))?;
        match self.receive(&mut body, deadline, start, progress) {
            Ok(()) => wire::read_reply(&body).map_err(|e| Death::Lost(format!("the child's reply: {e}"))),
            Err(Wait::Closed) => Err(self.death(None)),
            Err(Wait::Timeout) => Err(self.death(Some(limit))),
        }
    }

    fn send(&mut self, mut buf: &[u8], deadline: Instant, start: Instant, progress: &mut dyn FnMut(Duration)) -> Result<(), Wait> {
        let fd = self.to_child.as_ref().map(AsRawFd::as_raw_fd).ok_or(Wait::Closed)?;
        while !buf.is_empty() {
            self.wait(fd, libc::POLLOUT, deadline, start, progress)?;
            // SAFETY: writing from a live slice to an open descriptor.
            let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
            match n {
                n if n > 0 => buf = &buf[n as usize..],
                _ if would_block() || interrupted() => {}
                _ => return Err(Wait::Closed),
            }
        }
        Ok(())
    }

    fn receive(&mut self, buf: &mut [u8], deadline: Instant, start: Instant, progress: &mut dyn FnMut(Duration)) -> Result<(), Wait> {
        let fd = self.from_child.as_raw_fd();
        let mut at = 0;
        while at < buf.len() {
            self.wait(fd, libc::POLLIN, deadline, start, progress)?;
            // SAFETY: reading into the unfilled part of a live buffer from an open descriptor.
            let n = unsafe { libc::read(fd, buf[at..].as_mut_ptr().cast(), buf.len() - at) };
            match n {
                n if n > 0 => at += n as usize,
                _ if n < 0 && would_block() => {}
                _ => return Err(Wait::Closed),
            }
        }
        Ok(())
    }

    /// Waits until `fd` is ready for `events`, draining the child's output meanwhile.
    fn wait(
        &mut self,
        fd: RawFd,
        events: libc::c_short,
        deadline: Instant,
        start: Instant,
        progress: &mut dyn FnMut(Duration),
    ) -> Result<(), Wait> {
        let mut told = start.elapsed().as_secs() / PROGRESS_EVERY.as_secs();
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(Wait::Timeout);
            }
            let step = (deadline - now).min(Duration::from_millis(500));
            let mut fds =
                [libc::pollfd { fd, events, revents: 0 }, libc::pollfd { fd: self.output.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
            // SAFETY: `fds` is a live array of two pollfd.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, step.as_millis().max(1) as libc::c_int) };
            if r < 0 && !interrupted() {
                return Err(Wait::Closed);
            }
            if fds[1].revents & (libc::POLLIN | libc::POLLHUP) != 0 {
                self.drain_output();
            }
            if fds[0].revents & (events | libc::POLLHUP | libc::POLLERR) != 0 {
                return Ok(());
            }
            let secs = start.elapsed().as_secs() / PROGRESS_EVERY.as_secs();
            if secs > told {
                told = secs;
                progress(start.elapsed());
            }
        }
    }

    fn drain_output(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reading into a live stack buffer from an open descriptor.
            let n = unsafe { libc::read(self.output.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return;
            }
            let mut got = &buf[..n as usize];
            // The first bytes (an allocator's or a panic's own line) and the last are kept.
            let room = TAIL.saturating_sub(self.head.len()).min(got.len());
            self.head.extend_from_slice(&got[..room]);
            got = &got[room..];
            self.tail.extend_from_slice(got);
            if self.tail.len() > 2 * TAIL {
                self.tail.drain(..self.tail.len() - TAIL);
            }
        }
    }

    /// How the child ended: killed after `timeout` where it ran past it, else as `waitpid`
    /// reports (waiting a little for a child that closed its pipe and is exiting).
    fn death(&mut self, timeout: Option<Duration>) -> Death {
        self.to_child = None;
        let mut printed = Vec::new();
        if let Some(limit) = timeout {
            self.kill();
            self.drain_output();
            printed.extend_from_slice(&self.head);
            printed.extend_from_slice(&self.tail);
            // An allocation that failed before the limit, with the child still printing
            // its backtrace when the limit came, is the allocation's verdict.
            return match out_of_memory(&printed) {
                true => Death::OutOfMemory { message: message(&printed) },
                false => Death::TimedOut { limit },
            };
        }
        let status = self.reap(Duration::from_secs(2));
        self.drain_output();
        printed.extend_from_slice(&self.head);
        printed.extend_from_slice(&self.tail);
        classify(status, &printed)
    }

    fn kill(&mut self) {
        // SAFETY: signalling and reaping our own child.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
        }
        self.reap(Duration::from_secs(5));
    }

    /// Waits up to `grace` for the child to end, then kills it; its status once reaped.
    fn reap(&mut self, grace: Duration) -> Option<libc::c_int> {
        if self.pid <= 0 {
            return None;
        }
        let until = Instant::now() + grace;
        let mut status: libc::c_int = 0;
        loop {
            // SAFETY: waitpid on our own child with a live status slot.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r == self.pid {
                self.pid = 0;
                return Some(status);
            }
            if r < 0 {
                self.pid = 0;
                return None;
            }
            if Instant::now() >= until {
                // SAFETY: as above.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, &mut status, 0);
                }
                self.pid = 0;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Closing the request pipe ends the child's loop; a child that does not end is killed.
        self.to_child = None;
        self.reap(Duration::from_millis(500));
    }
}

enum Wait {
    Closed,
    Timeout,
}

fn would_block() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
}

fn interrupted() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
}

fn vec_of(n: usize) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, 0);
    Some(v)
}

/// Whether a line of the child's output is a backtrace's (frames, locations, notes), which
/// says where, not what.
fn backtrace_line(l: &str) -> bool {
    let frame = l.split_once(':').is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    frame || l.starts_with("at ") || l.starts_with("stack backtrace") || l.starts_with("note: ")
}

/// The child's last lines that are not a backtrace's, for a verdict's message.
fn message(printed: &[u8]) -> String {
    let text = String::from_utf8_lossy(printed);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !backtrace_line(l)).collect();
    let last = lines[lines.len().saturating_sub(3)..].join(" | ");
    if last.len() > 400 {
        let cut = (last.len() - 400..last.len()).find(|i| last.is_char_boundary(*i)).unwrap_or(last.len());
        format!("...{}", &last[cut..])
    } else {
        last
    }
}

/// Whether the child printed the allocator's failure (`memory allocation of N bytes failed`).
fn out_of_memory(printed: &[u8]) -> bool {
    let text = String::from_utf8_lossy(printed);
    text.contains("memory allocation of") && text.contains("failed")
}

/// How a child ended, from its wait status and its last output.
fn classify(status: Option<libc::c_int>, tail: &[u8]) -> Death {
    let message = message(tail);
    let Some(s) = status else { return Death::Lost(format!("the child's status could not be read; it printed: {message}")) };
    if libc::WIFEXITED(s) {
        return Death::Exited { status: libc::WEXITSTATUS(s), message };
    }
    let signal = if libc::WIFSIGNALED(s) { libc::WTERMSIG(s) } else { 0 };
    if out_of_memory(tail) && signal == libc::SIGABRT {
        return Death::OutOfMemory { message };
    }
    if signal == libc::SIGKILL {
        return Death::OutOfMemory { message: format!("killed by SIGKILL, as the system's out-of-memory killer does; {message}") };
    }
    Death::Signal { signal, name: signal_name(signal), message }
}

/// `SIGSEGV` for 11, and so on; `signal N` for the others.
fn signal_name(s: libc::c_int) -> String {
    let known = [
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGSYS, "SIGSYS"),
    ];
    known.iter().find(|(n, _)| *n == s).map(|(_, name)| name.to_string()).unwrap_or_else(|| format!("signal {s}"))
}

/// The child: limits, then one request after another until the verifier closes the pipe.
fn child_main(req: OwnedFd, resp: OwnedFd, out: OwnedFd, serve: &Serve<'_>, memory: u64) -> ! {
    op_core::process::entered_child();
    // SAFETY: in the child only: its stdout and stderr become the output pipe, and the limits
    // apply to this process alone.
    unsafe {
        libc::dup2(out.as_raw_fd(), 1);
        libc::dup2(out.as_raw_fd(), 2);
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        if let Some(size) = address_space() {
            let cap = size.saturating_add(memory);
            let lim = libc::rlimit { rlim_cur: cap as libc::rlim_t, rlim_max: cap as libc::rlim_t };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
        }
    }
    drop(out);
    // A panicking kernel's message without a backtrace: symbolising one takes the child long
    // enough to eat into the case's time limit.
    std::panic::set_hook(Box::new(|info| eprintln!("{info}")));
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("op-isolated-{i}")).build().ok();
    loop {
        let Some(body) = read_frame(req.as_raw_fd()) else { exit(0) };
        let reply = match wire::read_request(&body) {
            Ok((inputs, params)) => {
                let refs: Vec<&Tensor> = inputs.iter().collect();
                let run = || serve(&refs, &params);
                let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &pool {
                    Some(p) => p.install(run),
                    None => run(),
                }));
                caught.unwrap_or_else(|_| Err("the kernel panicked outside its shim".into()))
            }
            Err(e) => Err(format!("the verifier's request: {e}")),
        };
        if !write_all(resp.as_raw_fd(), &wire::frame(wire::reply(&reply))) {
            exit(3);
        }
    }
}

fn exit(code: libc::c_int) -> ! {
    // SAFETY: ends the child at once, running none of the parent's exit handlers.
    unsafe { libc::_exit(code) }
}

/// The child's address space in bytes (`/proc/self/statm`'s first field), where readable.
fn address_space() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(u64::try_from(page).ok()?))
}

fn read_frame(fd: RawFd) -> Option<Vec<u8>> {
    let mut prefix = [0u8; 8];
    read_exact(fd, &mut prefix)?;
    let mut body = vec_of(usize::try_from(wire::frame_len(prefix)).ok()?)?;
    read_exact(fd, &mut body)?;
    Some(body)
}

fn read_exact(fd: RawFd, buf: &mut [u8]) -> Option<()> {
    let mut at = 0;
    while at < buf.len() {
        // SAFETY: reading into the unfilled part of a live buffer.
        let n = unsafe { libc::read(fd, buf[at..].as_mut_ptr().cast(), buf.len() - at) };
        match n {
            n if n > 0 => at += n as usize,
            _ if n < 0 && interrupted() => {}
            _ => return None,
        }
    }
    Some(())
}

fn write_all(fd: RawFd, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: writing from a live slice.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        match n {
            n if n > 0 => buf = &buf[n as usize..],
            _ if n < 0 && interrupted() => {}
            _ => return false,
        }
    }
    true
}
