//! How a matrix file's `[knobs]` table reads into [`CellKnobs`]: key by key, each value read
//! straight from the file, so that an error keeps its line (serde's `flatten` would buffer the
//! table first and lose every line). A fault flag's key reads into [`FaultFlags`], any other
//! into [`RunKnobs`]; both name their keys as their flags do.

use std::fmt;
use std::marker::PhantomData;

use clap::{Args, Command};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::{CellKnobs, FaultFlags, RunKnobs};

impl<'de> Deserialize<'de> for CellKnobs {
    fn deserialize<D: Deserializer<'de>>(table: D) -> Result<CellKnobs, D::Error> {
        table.deserialize_map(KnobTable)
    }
}

/// The long flags a set of knobs declares: the keys a matrix file may give them.
fn keys<A: Args>() -> Vec<String> {
    A::augment_args(Command::new("knobs"))
        .get_arguments()
        .filter_map(|arg| arg.get_long().map(str::to_string))
        .collect()
}

struct KnobTable;

impl<'de> Visitor<'de> for KnobTable {
    type Value = CellKnobs;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table of knobs")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut table: M) -> Result<CellKnobs, M::Error> {
        let (every_key, fault_keys) = (keys::<CellKnobs>(), keys::<FaultFlags>());
        let mut knobs = CellKnobs::default();
        while let Some(key) = table.next_key::<String>()? {
            if !every_key.contains(&key) {
                // Refused while its value is read, so that the error carries the key's line.
                let expected: Vec<String> = every_key.iter().map(|k| format!("`{k}`")).collect();
                let why = format!(
                    "unknown field `{key}`, expected one of {}",
                    expected.join(", ")
                );
                return Err(match table.next_value_seed(Refuse(why.clone())) {
                    Err(refused) => refused,
                    Ok(()) => de::Error::custom(why),
                });
            }
            if fault_keys.contains(&key) {
                let one: FaultFlags = table.next_value_seed(OneEntry::new(key))?;
                knobs.faults = one.or(&knobs.faults);
            } else {
                let one: RunKnobs = table.next_value_seed(OneEntry::new(key))?;
                knobs.run = one.or(&knobs.run);
            }
        }
        Ok(knobs)
    }
}

/// Reads a value as the only entry, under `key`, of a table of `T`.
struct OneEntry<T> {
    key: String,
    of: PhantomData<T>,
}

impl<T> OneEntry<T> {
    fn new(key: String) -> OneEntry<T> {
        OneEntry {
            key,
            of: PhantomData,
        }
    }
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for OneEntry<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, value: D) -> Result<T, D::Error> {
        T::deserialize(Entry {
            key: Some(self.key),
            value: Some(value),
        })
    }
}

/// A table of one entry whose value is still to be read from the file.
struct Entry<D> {
    key: Option<String>,
    value: Option<D>,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Entry<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de, D: Deserializer<'de>> MapAccess<'de> for Entry<D> {
    type Error = D::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, D::Error> {
        match self.key.take() {
            Some(key) => seed
                .deserialize(de::value::StringDeserializer::<D::Error>::new(key))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, D::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::custom("a knob's value was read twice")),
        }
    }
}

/// Refuses whatever value it is given, with `.0`.
struct Refuse(String);

impl<'de> DeserializeSeed<'de> for Refuse {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, _value: D) -> Result<(), D::Error> {
        Err(de::Error::custom(self.0))
    }
}
