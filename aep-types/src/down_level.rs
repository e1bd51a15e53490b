//! Capture down-levelling (AEP-0001 §8.2, AEP-0002 §5.1): the event a
//! fan-out hop forwards to a consumer whose capture ceiling is lower than
//! the event's.
//!
//! The mechanical part, dropping every member whose `x-aep-capture` is
//! above the new level, is the generated `drop_above` of each payload
//! type. This module holds the protocol rules around it: how the new level
//! is chosen, and the few members that are `metadata` only "by exception"
//! and must degrade structurally instead of being dropped.

use crate::{Answer, Capture, Choice, Event, Payload};

impl Event {
    /// The event as forwarded to a consumer with capture ceiling `ceiling`.
    ///
    /// - A ceiling at or above the event's capture leaves it unchanged.
    /// - Otherwise every payload member above the new level is dropped,
    ///   nested and array members too, and `capture` is rewritten. Members
    ///   the schema does not describe count as `metadata`.
    /// - A `full` event against a `redacted` ceiling lands on `metadata`:
    ///   a hop cannot claim content passed a redaction pipeline.
    /// - Ceiling `none` keeps the envelope only, without `data`. A type
    ///   without a payload schema, or data that does not decode, cannot be
    ///   classified and loses `data` whole.
    /// - Below `redacted`, the members that are `metadata` by exception
    ///   degrade structurally: `attention.requested` `prompt` becomes
    ///   `"{agent} requests {kind}: {subject}"` (without `: {subject}` when
    ///   there is none), option, field and choice labels become their ids,
    ///   and `answer.values` keeps only number and boolean entries (a hop
    ///   cannot tell a choice id from free text without the request).
    pub fn down_level(&self, ceiling: Capture) -> Event {
        let current = self.capture_or_default();
        if ceiling >= current {
            return self.clone();
        }
        // `ceiling < current`, so a redacted ceiling means a full event.
        let level = if ceiling == Capture::Redacted {
            Capture::Metadata
        } else {
            ceiling
        };
        let data = match (&self.data, level) {
            (None, _) | (_, Capture::None) => None,
            (Some(_), _) => match self.payload() {
                Ok(Payload::Untyped(_)) | Err(_) => None,
                Ok(mut payload) => {
                    payload.drop_above(level);
                    if level < Capture::Redacted {
                        self.degrade(&mut payload);
                    }
                    // Decoded from JSON and only made smaller: it encodes.
                    Some(payload.to_data().expect("a decoded payload encodes"))
                }
            },
        };
        let mut event = self.with_data(data);
        event.capture = Some(level);
        event
    }

    /// Applies the "metadata by exception" rules to a payload.
    fn degrade(&self, payload: &mut Payload) {
        match payload {
            Payload::AttentionRequested(request) => {
                request.prompt = match &self.subject {
                    Some(subject) => format!("{} requests {}: {subject}", self.agent, request.kind),
                    None => format!("{} requests {}", self.agent, request.kind),
                };
                request.options.iter_mut().flatten().for_each(label_is_id);
                for field in request.fields.iter_mut().flatten() {
                    field.label = field.id.clone();
                    field.choices.iter_mut().flatten().for_each(label_is_id);
                }
            }
            Payload::AttentionAnswered(answered) => structural_values(&mut answered.answer),
            Payload::ControlAttentionRespond(respond) => structural_values(&mut respond.answer),
            _ => {}
        }
    }
}

fn label_is_id(choice: &mut Choice) {
    choice.label = choice.id.clone();
}

/// Keeps the `values` entries that are structural whatever the field.
fn structural_values(answer: &mut Answer) {
    if let Some(values) = &mut answer.values {
        values.retain(|_, value| value.is_number() || value.is_boolean());
    }
}

impl Payload {
    /// Drops every member, nested and array members too, whose
    /// `x-aep-capture` is above `level`: the mechanical part of
    /// [`Event::down_level`], without its choice of level and without the
    /// structural degrading of the "metadata by exception" members. An
    /// emitter that redacts content itself uses it to remove the `full`
    /// members from an event it emits at `redacted`. Untyped data has no
    /// capture table and is left as it is.
    pub fn drop_members_above(&mut self, level: Capture) {
        self.drop_above(level);
    }
}
