//! The queue rules of one concern, over [`crate::store::driver`]: see [`super`].
