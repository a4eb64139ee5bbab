//! Text on its way out: what lockpick prints for a person, and text that is not lockpick's own
//! (an exec program's error, a history's names, a matrix file's content) made safe for each place
//! it reaches: a terminal, markdown that may become a pull-request comment, a shell command to
//! paste, XML, a link in an HTML page.

pub mod html;
pub mod markdown;
pub mod shell;
pub mod stdout;
pub mod terminal;
pub mod xml;
