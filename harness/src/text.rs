//! Text on its way out: what lockpick prints for a person, and text that is not lockpick's own
//! (an exec program's error, a history's names, a matrix file's content) made safe for each place
//! it reaches: a terminal, markdown that may become a pull-request comment, XML.

pub mod markdown;
pub mod stdout;
pub mod terminal;
pub mod xml;
