package results

// Resources are the servers' resources a design needs to serve a workload
// at its planned rate: cores of the database, of memcached and Redis (the
// caches) and of the application (the stores' client side), memory and
// disk. The decision (package loadgen/recommend) weighs them by Prices.
type Resources struct {
	DBCores    float64 `json:"db_cores"`
	CacheCores float64 `json:"cache_cores"`
	AppCores   float64 `json:"app_cores"`
	// DBMemoryGB is the database's buffer pool; CacheMemoryGB what
	// memcached and Redis hold. GB are 10^9 bytes.
	DBMemoryGB    float64 `json:"db_memory_gb"`
	CacheMemoryGB float64 `json:"cache_memory_gb"`
	// StorageGB is the database's data on disk.
	StorageGB float64 `json:"storage_gb"`
}

// Cores is all the cores.
func (r Resources) Cores() float64 { return r.DBCores + r.CacheCores + r.AppCores }

// MemoryGB is all the memory.
func (r Resources) MemoryGB() float64 { return r.DBMemoryGB + r.CacheMemoryGB }

// Prices weigh resources into one cost to run: per core, per GB of memory
// and per GB of disk, in any one currency and period.
type Prices struct {
	Core     float64 `json:"core"`
	MemoryGB float64 `json:"memory_gb"`
	DiskGB   float64 `json:"disk_gb"`
}

// DefaultPrices are relative prices in units of one core: a GB of memory
// an eighth of a core (a core comes with 8 GB on the common general-purpose
// cloud machines), a GB of disk a two-hundredth (SSD at about a fortieth
// of memory's price per GB). Give your own for a bill.
var DefaultPrices = Prices{Core: 1, MemoryGB: 0.125, DiskGB: 0.005}

// Of is what r costs at p.
func (p Prices) Of(r Resources) float64 {
	return p.Core*r.Cores() + p.MemoryGB*r.MemoryGB() + p.DiskGB*r.StorageGB
}
