package results

import "github.com/pushpull/pushpull/registry"

// PaperFigures are the figures one design reached in the paper.
type PaperFigures struct {
	DataBytes      int64   // size of the database
	SubmitPerSec   float64 // messages submitted per second
	RetrievePerSec float64 // home timelines retrieved per second
}

// PaperSource cites where Paper's figures come from, and on what machine:
// anything we measure on current hardware is expected to be faster, so it is
// the ratios between the designs, not the absolute rates, that can be
// compared.
const PaperSource = `"Implementing Timeline in Web Services", Kazuho Oku, 2008 ` +
	`(MySQL 5.1, Pentium 4 3.0 GHz, 2 GB RAM)`

// Paper holds the published figures of "Implementing Timeline in Web
// Services", Kazuho Oku, 2008, measured with MySQL 5.1 on a Pentium 4 3.0 GHz
// with 2 GB RAM, for 10,000 users, 1,000,000 messages and 42.9 followees per
// user. Keys are the families the paper measured;
// use PaperFor to find a model's row.
var Paper = map[registry.Family]PaperFigures{
	registry.FamilyPush: {DataBytes: 2.0e9, SubmitPerSec: 560, RetrievePerSec: 1300},
	registry.FamilyPull: {DataBytes: 130e6, SubmitPerSec: 6700, RetrievePerSec: 120},
}

// PaperFor returns the paper's figures for the design m implements (its
// Family).
func PaperFor(m *Model) (PaperFigures, bool) {
	f, ok := Paper[m.Family]
	return f, ok
}
