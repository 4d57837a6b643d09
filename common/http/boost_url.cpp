// Boost.URL ships no compiled library on Debian 12: its sources are compiled here, once.
#include <boost/url/src.hpp>
