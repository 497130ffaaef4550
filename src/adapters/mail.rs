//! The mail account component (replaced by the real adapter as it lands).

use std::sync::Arc;

use super::AdapterContext;
use crate::config::AccountSpec;
use crate::supervisor::Component;

/// The component for one mail account.
pub fn build(spec: &AccountSpec, ctx: &AdapterContext) -> Arc<dyn Component> {
    super::unavailable(spec, ctx)
}
