//! Kernels under test are untrusted code: conformance runs a kernel where its crash cannot
//! reach the verifier. A [`Runner`] serves one (op, instance, backend) run: in a child process
//! forked from the verifier (Unix; `child`), with a time limit per case and a memory limit, or
//! in the verifier's own process where the policy says so (`core::limits::Isolation`). How a
//! child ended becomes a [`Death`], which conformance turns into a rejection with its class and
//! case; the verifier and every other op's verdict go on. Owns the child and the bytes to and
//! from it; decides no verdict.

#[cfg(unix)]
mod child;
mod wire;

use op_core::tensor::{Scalar, Tensor};
use std::fmt;
use std::time::Duration;

pub use wire::Reply;

/// How a kernel run in a child process ended without a reply.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Death {
    /// Killed by a signal (a segmentation fault, an abort, an illegal instruction, ...).
    Signal {
        /// The signal's number.
        signal: i32,
        /// Its name (`SIGSEGV`).
        name: String,
        /// The last lines the child printed.
        message: String,
    },
    /// The process exited in the middle of the call (the kernel called `exit`).
    Exited {
        /// The exit status.
        status: i32,
        /// The last lines the child printed.
        message: String,
    },
    /// An allocation failed under the memory limit, or the system killed the child for memory.
    OutOfMemory {
        /// The last lines the child printed (`memory allocation of N bytes failed`).
        message: String,
    },
    /// The call ran past its time limit (in a fresh child too: a timeout is confirmed before it
    /// becomes a verdict); the child was killed.
    TimedOut {
        /// The limit.
        limit: Duration,
    },
    /// A GPU kernel's launch ran past the device's wait limit (the backend's own error, which
    /// names the launch); the device stays busy with it, so nothing after it is judged.
    DeviceTimedOut(String),
    /// The child could not be started or talked to: the verifier's failure, not the kernel's.
    Lost(String),
}

impl Death {
    /// Whether this is a verdict on the kernel (everything but [`Death::Lost`]).
    pub fn is_kernels(&self) -> bool {
        !matches!(self, Death::Lost(_))
    }
}

impl fmt::Display for Death {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let said = |m: &str| if m.is_empty() { String::new() } else { format!("; it printed: {m}") };
        match self {
            Death::Signal { name, message, .. } => write!(f, "crashed: {name}{}", said(message)),
            Death::Exited { status, message } => write!(f, "the process exited with status {status} during the call{}", said(message)),
            Death::OutOfMemory { message } => write!(f, "out of memory{}", said(message)),
            Death::TimedOut { limit } => write!(f, "timed out after {:.3} s (in two fresh runs)", limit.as_secs_f64()),
            Death::DeviceTimedOut(e) => write!(f, "timed out on the device: {e}"),
            Death::Lost(why) => write!(f, "the verifier could not run the kernel in a child process: {why}"),
        }
    }
}

/// What a runner runs for each call.
pub type Serve<'a> = dyn Fn(&[&Tensor], &[Scalar]) -> Reply + Sync + 'a;

/// Runs one (op, instance, backend)'s calls, isolated or in process.
pub struct Runner<'a> {
    serve: Box<Serve<'a>>,
    isolated: bool,
    memory: u64,
    label: String,
    #[cfg(unix)]
    child: std::cell::RefCell<Option<child::Child>>,
}

impl<'a> Runner<'a> {
    /// A runner for `label` (`op on backend`, for progress lines), in a child process when
    /// `isolated` and the platform has them, allowed `memory` more bytes there.
    pub fn new(label: String, serve: Box<Serve<'a>>, isolated: bool, memory: u64) -> Runner<'a> {
        Runner {
            serve,
            isolated: isolated && cfg!(unix),
            memory,
            label,
            #[cfg(unix)]
            child: std::cell::RefCell::new(None),
        }
    }

    /// One call. In process: its reply. Isolated: the reply of the live child (forked on the
    /// first call and after a death), or how the child ended; `limit` bounds the wait, and a
    /// wait of more than a few seconds prints progress naming `case`.
    pub fn call(&self, inputs: &[&Tensor], params: &[Scalar], limit: Duration, case: &str) -> Result<Reply, Death> {
        if !self.isolated {
            return Ok((self.serve)(inputs, params));
        }
        self.call_isolated(inputs, params, limit, case)
    }

    #[cfg(unix)]
    fn call_isolated(&self, inputs: &[&Tensor], params: &[Scalar], limit: Duration, case: &str) -> Result<Reply, Death> {
        let mut slot = self.child.borrow_mut();
        if slot.is_none() {
            *slot = Some(child::Child::spawn(&*self.serve, self.memory).map_err(Death::Lost)?);
        }
        let Some(live) = slot.as_mut() else { return Err(Death::Lost("no child".into())) };
        let label = &self.label;
        let mut progress = |t: Duration| {
            eprintln!("conformance: {label}: {case} still running after {:.0} s (limit {:.1} s)", t.as_secs_f64(), limit.as_secs_f64())
        };
        let r = live.call(wire::request(inputs, params), limit, &mut progress);
        if r.is_err() {
            *slot = None;
        }
        r
    }

    #[cfg(not(unix))]
    fn call_isolated(&self, inputs: &[&Tensor], params: &[Scalar], _limit: Duration, _case: &str) -> Result<Reply, Death> {
        Ok((self.serve)(inputs, params))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn x(n: usize) -> Tensor {
        Tensor::vector((0..n).map(|i| i as f32).collect::<Vec<f32>>())
    }

    fn runner(f: impl Fn(usize) -> Reply + Sync + 'static) -> Runner<'static> {
        Runner::new("test".into(), Box::new(move |i: &[&Tensor], _: &[Scalar]| f(i[0].numel())), true, 1 << 30)
    }

    #[test]
    fn a_child_serves_calls_and_its_deaths_are_classed() {
        let r = runner(|n| match n {
            1 => std::process::abort(),
            2 => unsafe { Ok(vec![Tensor::vector(vec![std::ptr::read_volatile(8 as *const f32)])]) },
            3 => std::process::exit(7),
            4 => Ok(vec![Tensor::vector(vec![0u8; 1 << 40])]),
            5 => loop {
                std::hint::black_box(());
            },
            n => Ok(vec![x(n)]),
        });
        let t = Duration::from_secs(5);
        let ok = r.call(&[&x(8)], &[], t, "case").expect("a reply").expect("outputs");
        assert_eq!(ok[0].as_slice::<f32>().unwrap(), x(8).as_slice::<f32>().unwrap());
        assert!(matches!(r.call(&[&x(1)], &[], t, "case"), Err(Death::Signal { ref name, .. }) if name == "SIGABRT"));
        assert!(matches!(r.call(&[&x(2)], &[], t, "case"), Err(Death::Signal { ref name, .. }) if name == "SIGSEGV"));
        assert!(matches!(r.call(&[&x(3)], &[], t, "case"), Err(Death::Exited { status: 7, .. })));
        let oom = r.call(&[&x(4)], &[], t, "case");
        assert!(matches!(&oom, Err(Death::OutOfMemory { message }) if message.contains("memory allocation")), "{oom:?}");
        let slow = Duration::from_millis(300);
        assert!(matches!(r.call(&[&x(5)], &[], slow, "case"), Err(Death::TimedOut { limit }) if limit == slow));
        // After every death, the next call forks a fresh child that still serves.
        let again = r.call(&[&x(9)], &[], t, "case").expect("a reply").expect("outputs");
        assert_eq!(again[0].numel(), 9);
    }

    #[test]
    fn rayon_and_the_cpu_pool_work_in_the_child() {
        use rayon::prelude::*;
        let r = runner(|n| Ok(vec![Tensor::vector((0..n * 1000).into_par_iter().map(|i| i as f32).collect::<Vec<f32>>())]));
        let out = r.call(&[&x(64)], &[], Duration::from_secs(10), "case").expect("a reply").expect("outputs");
        assert_eq!(out[0].numel(), 64_000);
    }
}
