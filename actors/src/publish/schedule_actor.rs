//! `ScheduleActor`: one per scheduled post, activated by the timer wheel when
//! the post is due (or at start, for a post a crash left `publishing`). It
//! runs the publication one step at a time; a transient failure schedules
//! the next step after a backoff; it stops when the post is finished.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::publish::run::Step;
use crate::publish::Publishing;

pub enum ScheduleMsg {
    /// The post is due (or a retry is): run the next step.
    Fire,
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for ScheduleMsg {}

pub struct ScheduleActor;

pub struct ScheduleState {
    publishing: Arc<Publishing>,
    post_id: String,
}

impl Actor for ScheduleActor {
    type Msg = ScheduleMsg;
    type State = ScheduleState;
    type Arguments = (Arc<Publishing>, String);

    async fn pre_start(
        &self,
        _myself: ActorRef<ScheduleMsg>,
        (publishing, post_id): (Arc<Publishing>, String),
    ) -> Result<ScheduleState, ActorProcessingErr> {
        Ok(ScheduleState {
            publishing,
            post_id,
        })
    }

    #[tracing::instrument(skip_all, fields(post_id = %state.post_id))]
    async fn handle(
        &self,
        myself: ActorRef<ScheduleMsg>,
        msg: ScheduleMsg,
        state: &mut ScheduleState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ScheduleMsg::Fire => match {
                crate::faults::check(crate::faults::Point::Schedule);
                state.publishing.step(&state.post_id).await
            } {
                Step::Done => myself.stop(None),
                Step::RetryIn(delay) => {
                    myself.send_after(delay, || ScheduleMsg::Fire);
                }
            },
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ScheduleMsg>,
        state: &mut ScheduleState,
    ) -> Result<(), ActorProcessingErr> {
        state.publishing.forget(&state.post_id);
        Ok(())
    }
}
