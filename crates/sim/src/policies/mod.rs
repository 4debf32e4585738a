//! The promotion policies, one per file, all driven by the same walk events and ticks.

pub mod all;
pub mod fixed;
pub mod hawkeye;
pub mod ingens;
pub mod khugepaged;
pub mod linux;
pub mod mega;
pub mod none;
pub mod pcc;
