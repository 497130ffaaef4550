//! What the accounts of one platform share, set once by the composition root and found by its
//! type (mail's accounts share one mail-chat router, the time zone and the triage model). The
//! port names no platform: each value is found by a type only its platform names, so a platform
//! reads its own and nobody else's.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// The shared values, one per type; cheap to clone (every port holds the same map).
#[derive(Clone, Default)]
pub struct Shared(Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Shared {
    /// The same values with `value` added (replacing an earlier value of its type).
    pub fn with<T: Any + Send + Sync>(self, value: T) -> Self {
        let mut map = Arc::unwrap_or_clone(self.0);
        map.insert(TypeId::of::<T>(), Arc::new(value));
        Shared(Arc::new(map))
    }

    /// The value of type `T`, if the composition root set one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Zone(&'static str);

    #[test]
    fn a_value_is_found_by_its_type_and_the_last_one_set_wins() {
        let shared = Shared::default().with(Zone("UTC")).with(7u32);
        assert_eq!(shared.get::<Zone>(), Some(&Zone("UTC")));
        assert_eq!(shared.get::<u32>(), Some(&7));
        assert_eq!(shared.get::<u64>(), None, "a type nobody set");
        let again = shared.clone().with(Zone("Asia/Shanghai"));
        assert_eq!(again.get::<Zone>(), Some(&Zone("Asia/Shanghai")));
        assert_eq!(
            shared.get::<Zone>(),
            Some(&Zone("UTC")),
            "a clone keeps its own"
        );
    }
}
