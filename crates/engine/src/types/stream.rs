//! StreamValue: an append-only log of ID → field/value entries with consumer groups.

#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamValue {
    length: usize,
}

impl StreamValue {
    pub fn len(&self) -> usize {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    pub fn heap_size(&self) -> usize {
        0
    }
}
