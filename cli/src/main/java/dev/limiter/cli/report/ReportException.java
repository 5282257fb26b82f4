package dev.limiter.cli.report;

/** Why no report could be made, phrased for the operator, with the exit status it ends with. */
public final class ReportException extends Exception
{
    private static final long serialVersionUID = 1L;

    /** Exit status: a source did not answer, answered an error, or the file could not be written. */
    public static final int FAILED = 1;
    /** Exit status: bad input, found before any call. */
    public static final int USAGE = 2;

    private final int exitStatus;

    ReportException(final int exitStatus, final String message)
    {
        super(message, null, false, false);
        this.exitStatus = exitStatus;
    }

    static ReportException usage(final String message)
    {
        return new ReportException(USAGE, message);
    }

    static ReportException failed(final String message)
    {
        return new ReportException(FAILED, message);
    }

    /** {@link #FAILED} or {@link #USAGE}. */
    public int exitStatus()
    {
        return exitStatus;
    }
}
