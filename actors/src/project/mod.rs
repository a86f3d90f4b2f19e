//! Project processing: the stages a project runs, in order.

pub mod export;
pub mod pipeline;
pub mod reframe;
pub mod stages;
