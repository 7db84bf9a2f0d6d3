//! ListValue: elements, compact (listpack) while small, converting at Redis's thresholds.
use crate::listpack::Listpack;

#[derive(Debug, Clone, PartialEq)]
pub enum ListValue {
    Listpack(Listpack),
}

impl Default for ListValue {
    fn default() -> Self {
        ListValue::Listpack(Listpack::new())
    }
}

impl ListValue {
    pub fn len(&self) -> usize {
        match self {
            ListValue::Listpack(lp) => lp.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            ListValue::Listpack(_) => "listpack",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            ListValue::Listpack(lp) => lp.heap_size(),
        }
    }
}
