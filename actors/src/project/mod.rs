//! Project processing: the stages a project runs, in order.

pub mod pipeline;
pub mod stages;
