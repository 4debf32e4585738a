//! The machine shaped around a round of `bench promote`: memory pressure and fragmentation made
//! before the round's shaped arms and given back after them, so that every round sets the arms
//! on a machine short of huge pages beside the same arms on the machine as it was, and the
//! host's drift from minute to minute falls on both alike.
//!
//! The shaping is `hugewise env with`'s ([`hugewise_env::scoped::shape`]): journaled, and put
//! back when the round's shaped arms end, on error and on a signal.

use std::time::Instant;

use hugewise_env::scoped::{self, Plan, ProbeSize, Shaped};
use hugewise_env::Host;
use hugewise_results::promote::{ShapedRound, Shaping};

use crate::{Error, Result};

/// What to shape before a round's shaped arms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Hold memory until this much is available.
    pub pressure_leave: Option<u64>,
    /// Make this share of the free memory left useless for 2 MiB pages, with unmovable pages.
    pub fragment: Option<f64>,
}

/// Room beyond the region and the daemon's ring that the pressure must leave: the arms' own
/// page tables, the bench's code and the kernel's slack.
pub const MARGIN: u64 = 512 << 20;

impl Shape {
    /// Refuse, before anything is touched, a shaping this bench cannot run: nothing asked,
    /// not root, a level out of range, or pressure that would leave less than the arms need.
    pub fn check(&self, host: &Host, need: u64) -> Result<()> {
        if self.pressure_leave.is_none() && self.fragment.is_none() {
            return Err(Error::Config(
                "a shaped machine needs --shape-pressure-leave, --shape-fragment or both".into(),
            ));
        }
        host.require_root(
            "bench promote --shape-…",
            "memory held and fragmented by unmovable pages",
        )
        .map_err(Error::from_env)?;
        if let Some(f) = self.fragment {
            if !(0.0..=0.95).contains(&f) {
                return Err(Error::Config(format!(
                    "--shape-fragment {:.0}% is outside 0..95%",
                    f * 100.0
                )));
            }
        }
        if let Some(leave) = self.pressure_leave {
            let floor = self.plan().floor_bytes;
            if leave < floor {
                return Err(Error::Config(format!(
                    "--shape-pressure-leave {} MiB is below the safety floor of {} MiB",
                    leave >> 20,
                    floor >> 20
                )));
            }
            if leave < need + MARGIN {
                return Err(Error::Config(format!(
                    "--shape-pressure-leave {} MiB leaves too little: each arm needs {} MiB \
                     (its region and the daemon's ring) and {} MiB beside it; leave at least \
                     {} MiB",
                    leave >> 20,
                    need >> 20,
                    MARGIN >> 20,
                    (need + MARGIN).div_ceil(1 << 20)
                )));
            }
            let available = hugewise_env::state::measure(host)
                .map_err(Error::from_env)?
                .available();
            if leave >= available {
                return Err(Error::Config(format!(
                    "--shape-pressure-leave {} MiB leaves all there is ({} MiB available): \
                     the shaped machine would be the machine as it is",
                    leave >> 20,
                    available >> 20
                )));
            }
        }
        Ok(())
    }

    /// The plan `hugewise env with` would run for it: no probe (its huge pages would be taken
    /// from what the arms should find), unmovable pages keeping blocks broken.
    pub fn plan(&self) -> Plan {
        Plan {
            pressure: scoped::pressure_target(self.pressure_leave, None),
            fragment: self.fragment,
            probe: ProbeSize::Off,
            ..Plan::new()
        }
    }

    /// Shape the machine for `round`'s shaped arms: the machine is put back when the returned
    /// value is dropped. The record says what the shaping gave.
    pub fn apply(
        &self,
        host: &Host,
        round: u32,
        cancel: &dyn Fn() -> bool,
    ) -> Result<(Shaped, ShapedRound)> {
        let t0 = Instant::now();
        let shaped = scoped::shape(host, &self.plan(), cancel, &mut |_, _, _| {})
            .map_err(Error::from_env)?;
        let report = shaped.report();
        let record = ShapedRound {
            round,
            seconds: t0.elapsed().as_secs_f64(),
            fragment_reached: report.fragment.as_ref().map(|f| f.reached),
            memory: report.shaped.clone(),
            warnings: report.warnings.clone(),
            unshaped_unusable_share: None,
        };
        Ok((shaped, record))
    }

    /// Before the first round: put free memory the kernel has not yet listed into its lists
    /// (as shaping does before it fragments), so that round 0's unshaped arms find the
    /// machine every later round's do. The bytes it listed, if any.
    pub fn list_free_memory(&self, host: &Host, cancel: &dyn Fn() -> bool) -> Result<Option<u64>> {
        if self.fragment.is_none() {
            return Ok(None);
        }
        let floor = self.plan().floor_bytes;
        let listed = hugewise_env::pressure::hand_over(host, floor, cancel, &mut |_, _| {})
            .map_err(Error::from_env)?;
        Ok(listed.map(|l| l.listed_bytes))
    }

    /// The record of what was asked, before any round.
    pub fn record(&self) -> Shaping {
        Shaping {
            pressure_leave_bytes: self.pressure_leave,
            fragment: self.fragment,
            ..Shaping::default()
        }
    }
}

/// Give the shaped machine back, and refuse to go on when a change could not be undone: the
/// next arms would run on a machine still partly shaped.
pub fn put_back(shaped: Shaped) -> Result<()> {
    let done = shaped.finish().map_err(Error::from_env)?;
    if !done.restore.complete() {
        return Err(Error::Config(format!(
            "{} change(s) of the shaped machine could not be undone and stay in the journal \
             (`hugewise env restore` retries them)",
            done.restore.failed.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake machine whose meminfo is this VM's at rest: 24,417,516 kB (23.3 GiB) available.
    fn machine() -> hugewise_env::testing::FakeMachine {
        let m = hugewise_env::testing::FakeMachine::new();
        std::fs::write(
            m.root().join("proc/meminfo"),
            include_str!("../../../sys/tests/samples/meminfo-6.18.txt"),
        )
        .expect("meminfo");
        std::fs::write(
            m.root().join("proc/buddyinfo"),
            "Node 0, zone   Normal      0      0      0      0      0      0      0      0      0      0   1024\n",
        )
        .expect("buddyinfo");
        m
    }

    #[test]
    fn a_shape_that_asks_nothing_or_leaves_too_little_is_refused_with_the_room_it_needs() {
        let m = machine();
        let host = || m.host();
        let none = Shape {
            pressure_leave: None,
            fragment: None,
        };
        let m = none
            .check(&host(), 1 << 30)
            .expect_err("nothing")
            .to_string();
        assert!(m.contains("--shape-pressure-leave"), "{m}");
        let tight = Shape {
            pressure_leave: Some(1 << 30),
            fragment: Some(0.5),
        };
        let m = tight
            .check(&host(), 1 << 30)
            .expect_err("tight")
            .to_string();
        for want in ["leaves too little", "1024 MiB", "at least 1536 MiB"] {
            assert!(m.contains(want), "{want}: {m}");
        }
        let roomy = Shape {
            pressure_leave: Some(2 << 30),
            ..tight
        };
        roomy.check(&host(), 1 << 30).expect("room enough");
        // Below the floor, or all there is: refused before anything is held.
        let low = Shape {
            pressure_leave: Some(512 << 20),
            fragment: None,
        };
        let m = low.check(&host(), 1 << 20).expect_err("floor").to_string();
        assert!(m.contains("below the safety floor of 1024 MiB"), "{m}");
        let all = Shape {
            pressure_leave: Some(24 << 30),
            fragment: None,
        };
        let m = all.check(&host(), 1 << 30).expect_err("all").to_string();
        assert!(
            m.contains("leaves all there is (23845 MiB available)"),
            "{m}"
        );
        let over = Shape {
            pressure_leave: None,
            fragment: Some(0.99),
        };
        let m = over.check(&host(), 1 << 30).expect_err("level").to_string();
        assert!(m.contains("outside 0..95%"), "{m}");
    }

    #[test]
    fn the_plan_holds_and_fragments_without_a_probe() {
        let p = Shape {
            pressure_leave: Some(12 << 30),
            fragment: Some(0.5),
        }
        .plan();
        assert_eq!(
            p.pressure,
            Some(hugewise_env::pressure::PressureTarget::Leave(12 << 30))
        );
        assert_eq!(p.fragment, Some(0.5));
        assert_eq!(p.probe, ProbeSize::Off);
    }
}
