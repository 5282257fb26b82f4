package dev.limiter.protocol;

/**
 * A fixed window of one calendar month in UTC: at most {@code limit} tokens from the first of a
 * month, 00:00 UTC, to the first of the next ("10,000 a month" resets as the month turns, whatever
 * its length). A key's state is what is left of the month's limit; the month it belongs to is the
 * one holding the time stored with it. Months are computed with integer civil-calendar arithmetic
 * (proleptic Gregorian, as {@code java.time}), no allocation. Immutable.
 */
public final class CalendarMonthWindow extends FixedWindow
{
    private static final long DAY_NANOS = 86_400_000_000_000L;
    /** The average Gregorian month, for the RateLimit-Policy window and the SDK's local budgets. */
    public static final long AVERAGE_MONTH_SECONDS = 2_629_746L;

    /** @param limit tokens per calendar month, at least 1 */
    public CalendarMonthWindow(final long limit)
    {
        super(limit, AVERAGE_MONTH_SECONDS * 1_000_000_000L);
    }

    @Override
    protected long windowIndex(final long nanos)
    {
        return monthIndex(nanos);
    }

    @Override
    protected long windowStartNanos(final long index)
    {
        return monthStartNanos(index);
    }

    /** Months since January 1970 (negative before) of the UTC instant {@code utcNanos}. */
    public static long monthIndex(final long utcNanos)
    {
        // Civil from days (H. Hinnant's algorithm): the year and month of a day count.
        final long z = Math.floorDiv(utcNanos, DAY_NANOS) + 719_468;
        final long era = Math.floorDiv(z, 146_097);
        final long dayOfEra = z - era * 146_097;
        final long yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365;
        final long dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100);
        final long shiftedMonth = (5 * dayOfYear + 2) / 153; // 0 = March
        final long month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
        final long year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
        return (year - 1970) * 12 + month - 1;
    }

    /** The UTC instant (ns since the epoch) at which month {@code index} ({@link #monthIndex}) begins. */
    public static long monthStartNanos(final long index)
    {
        final long month = Math.floorMod(index, 12) + 1;
        final long year = 1970 + Math.floorDiv(index, 12) - (month <= 2 ? 1 : 0);
        // Days from civil (the inverse of the above), for the first of the month.
        final long era = Math.floorDiv(year, 400);
        final long yearOfEra = year - era * 400;
        final long dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5;
        final long dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear;
        return (era * 146_097 + dayOfEra - 719_468) * DAY_NANOS;
    }

    @Override
    public CalendarMonthWindow share(final int index, final int shares)
    {
        checkShare(limit, index, shares, "window's rate");
        return new CalendarMonthWindow(TokenBucket.shareOf(limit, index, shares));
    }

    @Override
    public String algorithm()
    {
        return "FIXED_WINDOW (calendar month)";
    }
}
